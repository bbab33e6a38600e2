package docs

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

// documents are the files whose kubectl commands users copy: Markdown (its code only), the
// chart's NOTES.txt and alert texts, and the comments of the samples, examples and GitOps files.
var documents = []string{
	"*.md", "docs/*.md", "docs/*/*.md", "examples/*.md", "examples/*/*.md", "gitops/*.md",
	"hack/cluster/*.md", "charts/sts-operator/templates/NOTES.txt",
	"charts/sts-operator/monitoring/*.yaml", "config/samples/*.yaml", "config/samples/*/*.yaml",
	"examples/*.yaml", "examples/*/*.yaml", "gitops/*/*.yaml",
}

// builtinResources are the built-in resource names, singular names and short names the
// documents may use (a fixed list: the API server of the tests has no kubectl's cache).
var builtinResources = []string{
	"all",
	"pods", "pod", "po",
	"deployments", "deployment", "deploy",
	"replicasets", "replicaset", "rs",
	"statefulsets", "statefulset", "sts",
	"services", "service", "svc",
	"endpointslices", "endpointslice",
	"events", "event", "ev",
	"configmaps", "configmap", "cm",
	"secrets", "secret",
	"namespaces", "namespace", "ns",
	"nodes", "node", "no",
	"persistentvolumeclaims", "persistentvolumeclaim", "pvc",
	"persistentvolumes", "persistentvolume", "pv",
	"serviceaccounts", "serviceaccount", "sa",
	"roles", "role", "rolebindings", "rolebinding",
	"clusterroles", "clusterrole", "clusterrolebindings", "clusterrolebinding",
	"customresourcedefinitions", "customresourcedefinition", "crd", "crds",
	"networkpolicies", "networkpolicy", "netpol",
	"poddisruptionbudgets", "poddisruptionbudget", "pdb",
	"leases", "lease", "jobs", "job", "cronjobs", "cronjob",
}

// kubectlNames are the resource names kubectl resolves to a SimpleTableServer, from the CRD
// that controller-gen generates: plural, singular, kind, short names and categories, each also
// qualified by the group.
func kubectlNames(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "config/crd/bases/sts.tableserver.dev_simpletableservers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	n := crd.Spec.Names
	names := append([]string{n.Plural, n.Singular, strings.ToLower(n.Kind)}, n.ShortNames...)
	for _, name := range slices.Clone(names) {
		names = append(names, name+"."+crd.Spec.Group)
	}
	names = append(names, n.Categories...)
	slices.Sort(names)
	return slices.Compact(names) // the singular is the kind in lower case
}

// verbResource says where each kubectl verb the documents use takes its resource type: the
// first argument (0), the second (1: a subcommand first, as in `rollout status deploy/x`), or
// none (-1: files, kustomizations, the client itself).
var verbResource = map[string]int{
	"get": 0, "describe": 0, "delete": 0, "edit": 0, "patch": 0, "label": 0, "annotate": 0,
	"scale": 0, "explain": 0, "wait": 0, "logs": 0, "exec": 0, "port-forward": 0, "create": 0,
	"rollout": 1, "top": 0,
	"apply": -1, "kustomize": -1, "version": -1, "config": -1, "api-resources": -1, "diff": -1,
	"cluster-info": -1,
}

// podDefault are the verbs whose argument without a type/ prefix is a pod's name.
var podDefault = []string{"logs", "exec", "port-forward"}

// flagsWithValue are the flags the documents give a separate value to (`-n load`).
var flagsWithValue = []string{
	"-n", "--namespace", "-o", "--output", "-l", "--selector", "-f", "--filename", "-k",
	"--kustomize", "-c", "--container", "-p", "--patch", "--patch-file", "--type", "--for",
	"--timeout", "--field-selector", "--context", "--kubeconfig", "--replicas",
}

var (
	// kubectlCommand finds kubectl where a command starts: at the start of a line (after a
	// prompt), of a comment, a code span or a subshell, or after a pipe or ; or &&. It runs
	// to the end of the line or of the code span. Prose that mentions kubectl is not a command.
	kubectlCommand = regexp.MustCompile("(?m)(?:^[ \\t]*(?:\\$[ \\t]+)?|[#`|;(][ \\t]*|&&[ \\t]*)kubectl\\s+([^`\\n]*)")
	// templateAction is a Helm template action, which may hold spaces: one word once replaced.
	templateAction = regexp.MustCompile(`\{\{[^}]*\}\}`)
	// codeSpans are a Markdown file's fenced blocks and inline code, where commands are.
	codeSpans = regexp.MustCompile("(?s)```.*?```|`[^`\\n]+`")
)

// command is one kubectl command found in a document.
type command struct {
	file, text string
}

// commands returns the kubectl commands of the documents; lines continued with a backslash are
// joined first.
func commands(t *testing.T) []command {
	t.Helper()
	var found []command
	for _, pattern := range documents {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.ReplaceAll(string(data), "\\\n", " ")
			text = templateAction.ReplaceAllString(text, "TEMPLATE")
			parts := []string{text}
			if strings.HasSuffix(file, ".md") {
				parts = codeSpans.FindAllString(text, -1)
			}
			rel, _ := filepath.Rel(root, file)
			for _, part := range parts {
				for _, m := range kubectlCommand.FindAllStringSubmatch(part, -1) {
					found = append(found, command{file: rel, text: "kubectl " + strings.TrimSpace(m[1])})
				}
			}
		}
	}
	return found
}

// resourceType returns the resource type a kubectl command names, "" when it names none, or an
// error message when the command is one this test cannot read.
func resourceType(text string) (string, string) {
	words := strings.Fields(strings.TrimPrefix(text, "kubectl "))
	var verb string
	var args []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--" || strings.HasPrefix(w, "#") || w == "|" || w == "&&" || w == ";" || w == "<<'YAML'":
			i = len(words)
		case strings.HasPrefix(w, "-"):
			if slices.Contains(flagsWithValue, w) {
				i++
			}
		case verb == "":
			verb = w
		default:
			args = append(args, w)
		}
	}
	if verb == "" {
		return "", ""
	}
	at, known := verbResource[verb]
	switch {
	case !known:
		return "", "kubectl verb " + verb + " is not one this test knows: add it to verbResource"
	case at < 0 || len(args) <= at:
		return "", ""
	}
	arg := args[at]
	if verb == "create" && arg == "token" {
		return "", "" // a ServiceAccount's name follows
	}
	typ, _, named := strings.Cut(arg, "/")
	if !named && slices.Contains(podDefault, verb) {
		return "", "" // a pod's name
	}
	if verb == "explain" {
		typ, _, _ = strings.Cut(typ, ".") // a field path follows the type
		return typ, ""
	}
	return typ, ""
}

// TestDocumentedKubectlCommandsNameResourcesThatExist reads every kubectl command the documents
// show and checks that the resource types it names are ones kubectl finds: a built-in or a
// name of the SimpleTableServer CRD (`kubectl get table` failed in the chart's NOTES).
func TestDocumentedKubectlCommandsNameResourcesThatExist(t *testing.T) {
	crdNames := kubectlNames(t)
	known := append(slices.Clone(crdNames), builtinResources...)
	cmds := commands(t)
	if len(cmds) < 20 {
		t.Fatalf("found %d kubectl commands in the documents, want the README's and the others' (at least 20)", len(cmds))
	}
	checked := 0
	for _, c := range cmds {
		typ, problem := resourceType(c.text)
		if problem != "" {
			t.Errorf("%s: %q: %s", c.file, c.text, problem)
			continue
		}
		if typ == "" {
			continue
		}
		checked++
		for _, one := range strings.Split(typ, ",") {
			if !slices.Contains(known, strings.ToLower(one)) {
				t.Errorf("%s: %q names resource type %q, which kubectl does not know (the CRD's names: %v)", c.file, c.text, one, crdNames)
			}
		}
	}
	t.Logf("%d kubectl commands, %d of them naming a resource type", len(cmds), checked)
	// Most documented commands name a type (40 of 62 when this was written): far fewer means
	// resourceType stopped finding them, and the check above checked nothing.
	if checked*2 < len(cmds) {
		t.Errorf("only %d of %d kubectl commands name a resource type that was checked, want at least half", checked, len(cmds))
	}
}

func TestResourceType(t *testing.T) {
	for text, want := range map[string]string{
		"kubectl get tables -w":                                        "tables",
		"kubectl get -n load table sts-examples -w":                    "table",
		"kubectl -n TEMPLATE rollout status deployment/TEMPLATE":       "deployment",
		"kubectl scale -n load simpletableserver/coupons --replicas=5": "simpletableserver",
		"kubectl exec -n load deployment/redis -- sh -c 'kubectl x'":   "deployment",
		"kubectl logs -l app.kubernetes.io/name=simpletableserver":     "",
		"kubectl logs my-pod":                                          "",
		"kubectl explain simpletableserver.spec":                       "simpletableserver",
		"kubectl create secret generic redis --from-literal=a=b":       "secret",
		"kubectl apply -n load -k config/samples/redis":                "",
		"kubectl delete crd simpletableservers.sts.tableserver.dev":    "crd",
		"kubectl get pods,svc -n load":                                 "pods,svc",
	} {
		got, problem := resourceType(text)
		if got != want || problem != "" {
			t.Errorf("resourceType(%q) = %q, %q; want %q", text, got, problem, want)
		}
	}
	if _, problem := resourceType("kubectl frobnicate x"); problem == "" {
		t.Error("an unknown verb passes; want it reported, so that the test is taught it")
	}
}
