package specs

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// update rewrites the golden files instead of comparing with them: `make golden`.
var update = flag.Bool("update", false, "rewrite testdata/*.yaml from the builders (make golden)")

// The golden files are the objects the builders make of each sample SimpleTableServer, as YAML a
// reviewer reads: a change to a builder shows in its diff of testdata/, and one that was not
// meant fails this test.
const (
	// goldenNamespace is the namespace the samples are applied to (kubectl apply -k -n load).
	goldenNamespace = "load"
	// goldenOperatorNamespace is where the operator runs, which a NetworkPolicy lets in.
	goldenOperatorNamespace = "sts-system"
	goldenDir               = "testdata"
)

// goldenSampleDirs hold the samples whose objects are golden.
var goldenSampleDirs = []string{"../../config/samples", "../../config/samples/redis"}

// TestGolden builds the Deployment, Service, claim, budget and NetworkPolicy of each sample
// SimpleTableServer, as the API server would serve it (the CRD's defaults applied) and without
// the admin's defaults, and compares them with testdata/<name>.yaml. No sample sets
// spec.networkPolicy (it would keep the demo's load generator out), so the first sample is built
// once more with one, as testdata/<name>-networkpolicy.yaml.
func TestGolden(t *testing.T) {
	samples := goldenSamples(t)
	if len(samples) == 0 {
		t.Fatal("no sample SimpleTableServer found")
	}
	withPolicy := samples[0].DeepCopy()
	withPolicy.Name += "-networkpolicy"
	withPolicy.Spec.NetworkPolicy = &stsv1alpha1.NetworkPolicy{From: []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"load-test": "injectors"}},
	}}}
	samples = append(samples, withPolicy)

	want := map[string]bool{}
	for _, tableServer := range samples {
		from := "config/samples"
		if tableServer == withPolicy {
			from = "config/samples' " + samples[0].Name + " with spec.networkPolicy"
		}
		file := filepath.Join(goldenDir, tableServer.Name+".yaml")
		if want[file] {
			t.Fatalf("two samples named %s", tableServer.Name)
		}
		want[file] = true
		got := goldenObjects(t, tableServer, from)
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (make golden writes it)", file, err)
			continue
		}
		if !bytes.Equal(old, got) {
			t.Errorf("%s differs from what the builders make of sample %s (make golden rewrites it; review its diff):\n%s",
				file, tableServer.Name, lineDiff(string(old), string(got)))
		}
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if want[f] {
			continue
		}
		if *update {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: no sample of that name any more (make golden removes it)", f)
	}
}

// goldenObjects is the YAML of the objects built for tableServer, one document each, in the
// order the reconciler applies them; an object the resource does not have is a comment saying
// so.
func goldenObjects(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, from string) []byte {
	t.Helper()
	image := specstest.Image
	var out bytes.Buffer
	fmt.Fprintf(&out, "# The objects internal/specs builds for the SimpleTableServer %q (%s), in\n", tableServer.Name, from)
	fmt.Fprintf(&out, "# namespace %s with image %s and no admin defaults. Written by make golden.\n", goldenNamespace, image)
	for _, o := range []struct {
		kind string
		gvk  schema.GroupVersionKind
		obj  runtime.Object // nil: the resource has none
		none string         // why there is none
	}{
		{"PersistentVolumeClaim", corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), orNil(PersistentVolumeClaim(tableServer, image)), "spec.storage names no size"},
		{"Deployment", appsv1.SchemeGroupVersion.WithKind("Deployment"), Deployment(tableServer, image, nil), ""},
		{"Service", corev1.SchemeGroupVersion.WithKind("Service"), Service(tableServer, image), ""},
		{"PodDisruptionBudget", policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), orNil(PodDisruptionBudget(tableServer, image)), "one replica"},
		{"NetworkPolicy", networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), orNil(NetworkPolicy(tableServer, image, goldenOperatorNamespace)), "spec.networkPolicy is not set"},
	} {
		if o.obj == nil {
			fmt.Fprintf(&out, "---\n# no %s: %s\n", o.kind, o.none)
			continue
		}
		o.obj.GetObjectKind().SetGroupVersionKind(o.gvk)
		out.WriteString("---\n")
		out.Write(objectYAML(t, o.obj))
	}
	return out.Bytes()
}

// orNil turns a typed nil pointer into a nil runtime.Object.
func orNil[T any, P interface {
	*T
	runtime.Object
}](p P) runtime.Object {
	if p == nil {
		return nil
	}
	return p
}

// objectYAML is obj as YAML without what the API server fills in (creationTimestamp, status).
func objectYAML(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(u, "status")
	if meta, ok := u["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if tmpl, ok := u["spec"].(map[string]any)["template"].(map[string]any); ok {
		delete(tmpl["metadata"].(map[string]any), "creationTimestamp")
	}
	b, err := yaml.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// goldenSamples reads every SimpleTableServer of the sample directories, in the namespace they
// are applied to, with the CRD's defaults applied as the API server does on create.
func goldenSamples(t *testing.T) []*stsv1alpha1.SimpleTableServer {
	t.Helper()
	crd := crdSchema(t)
	var samples []*stsv1alpha1.SimpleTableServer
	for _, dir := range goldenSampleDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(files)
		for _, file := range files {
			for _, doc := range yamlDocuments(t, file) {
				var u map[string]any
				if err := yaml.Unmarshal(doc, &u); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				if u["kind"] != "SimpleTableServer" {
					continue
				}
				structuraldefaulting.Default(u, crd)
				tableServer := &stsv1alpha1.SimpleTableServer{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u, tableServer, true); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				tableServer.Namespace = goldenNamespace
				tableServer.UID = "00000000-0000-0000-0000-000000000001"
				samples = append(samples, tableServer)
			}
		}
	}
	return samples
}

// yamlDocuments splits a YAML file into its documents.
func yamlDocuments(t *testing.T, file string) [][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// crdSchema is the structural schema of the CRD's served version, whose defaults the API server
// writes into every SimpleTableServer it stores.
func crdSchema(t *testing.T) *structuralschema.Structural {
	t.Helper()
	data, err := os.ReadFile("../../config/crd/bases/sts.tableserver.dev_simpletableservers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != stsv1alpha1.GroupVersion.Version {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Fatalf("the CRD serves no version %s", stsv1alpha1.GroupVersion.Version)
	return nil
}

// lineDiff shows the lines of got that are not in want's place, with line numbers: enough to see
// what moved, without a diff library.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 20; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  - %s\n  + %s\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
