package project

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// project is the part of kubebuilder's PROJECT file (config version 3) that names paths.
type project struct {
	Version     string   `json:"version"`
	Domain      string   `json:"domain"`
	ProjectName string   `json:"projectName"`
	Layout      []string `json:"layout"`
	Repo        string   `json:"repo"`
	Resources   []struct {
		API *struct {
			CRDVersion string `json:"crdVersion"`
			Namespaced bool   `json:"namespaced"`
		} `json:"api"`
		Controller bool   `json:"controller"`
		Domain     string `json:"domain"`
		Group      string `json:"group"`
		Kind       string `json:"kind"`
		Path       string `json:"path"`
		Version    string `json:"version"`
	} `json:"resources"`
}

// layoutDirs are the directories a kubebuilder layout plugin scaffolds into: a PROJECT that
// declares one says kubebuilder may scaffold there, so they must be where the code is.
var layoutDirs = map[string][]string{
	"go.kubebuilder.io/v4": {"cmd/main.go", "internal/controller"},
}

func TestProjectDescribesTheRepository(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	var p project
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("PROJECT: %v", err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(gomod)
	if module == nil || p.Repo != string(module[1]) {
		t.Errorf("repo = %q, want go.mod's module (%q)", p.Repo, module)
	}
	for _, plugin := range p.Layout {
		dirs, known := layoutDirs[plugin]
		if !known {
			t.Errorf("layout %s: not a layout this test knows the directories of", plugin)
		}
		for _, dir := range dirs {
			if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
				t.Errorf("layout %s scaffolds %s, which the repository does not have: %v", plugin, dir, err)
			}
		}
	}
	if len(p.Resources) == 0 {
		t.Fatal("PROJECT lists no resources")
	}
	for _, r := range p.Resources {
		dir, inModule := strings.CutPrefix(r.Path, p.Repo+"/")
		if !inModule {
			t.Errorf("%s: path %s is not in module %s", r.Kind, r.Path, p.Repo)
			continue
		}
		if !declares(t, filepath.Join(root, dir), r.Kind) {
			t.Errorf("%s: package %s declares no type %s", r.Kind, dir, r.Kind)
		}
		if r.API != nil {
			checkCRD(t, r.Group+"."+r.Domain, r.Kind, r.Version, r.API.Namespaced)
		}
		if r.Controller && !declares(t, filepath.Join(root, "internal/controller"), r.Kind+"Reconciler") {
			t.Errorf("%s: controller: true, but internal/controller/ declares no %sReconciler", r.Kind, r.Kind)
		}
	}
}

// declares reports whether a Go file of dir declares the type name.
func declares(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^type ` + regexp.QuoteMeta(name) + ` struct`)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if decl.Match(text) {
			return true
		}
	}
	return false
}

// checkCRD checks that config/crd/bases holds the CRD of kind in group, serving version, of the
// scope PROJECT says.
func checkCRD(t *testing.T, group, kind, version string, namespaced bool) {
	t.Helper()
	path := filepath.Join(root, "config/crd/bases", group+"_"+strings.ToLower(kind)+"s.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: no CRD of group %s: %v", kind, group, err)
		return
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if crd.Spec.Group != group || crd.Spec.Names.Kind != kind {
		t.Errorf("%s defines %s in %s, PROJECT %s in %s", path, crd.Spec.Names.Kind, crd.Spec.Group, kind, group)
	}
	if (crd.Spec.Scope == apiextensionsv1.NamespaceScoped) != namespaced {
		t.Errorf("%s: scope %s, PROJECT says namespaced: %t", kind, crd.Spec.Scope, namespaced)
	}
	if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version }) {
		t.Errorf("%s: the CRD serves no version %s", kind, version)
	}
}
