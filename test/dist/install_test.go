package dist

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// namespace is the operator's namespace in install.yaml: the README's, and hack/install-yaml.sh's
// default.
const namespace = "sts-system"

// installYAML returns the install.yaml to test: STS_INSTALL_YAML when set (`make dist-test`
// points it at dist/install.yaml), else one that hack/install-yaml.sh renders now, as `make
// dist` does, with the HELM that `make test` provides.
func installYAML(t *testing.T, kubectl string) string {
	t.Helper()
	if path := os.Getenv("STS_INSTALL_YAML"); path != "" {
		return path
	}
	helm := os.Getenv("HELM")
	if helm == "" {
		testutil.Skip(t, "neither STS_INSTALL_YAML nor HELM is set; `make test` sets HELM")
	}
	cmd := exec.Command("hack/install-yaml.sh", "0.0.0-test")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "HELM="+helm, "KUBECTL="+kubectl)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/install-yaml.sh: %v\n%s", err, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "install.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInstallYAMLInstallsTheOperator applies install.yaml as the README says, with kubectl, to
// an empty API server: every object is accepted, the CRD becomes established, the operator's
// objects land in its namespace with RBAC bound to its ServiceAccount, a SimpleTableServer can
// then be created, and applying again changes nothing (no object's resourceVersion moves).
// envtest runs no kubelet, so the manager pod itself is not started: the e2e suite runs the
// operator.
func TestInstallYAMLInstallsTheOperator(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		testutil.Skip(t, "KUBEBUILDER_ASSETS is not set; `make test` builds the control plane and sets it")
	}
	path := installYAML(t, filepath.Join(assets, "kubectl"))

	env := &envtest.Environment{}
	if _, err := env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	// An administrator, as who installs an operator is.
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := kc.Run(args...)
		out, _ := io.ReadAll(stdout)
		errOut, _ := io.ReadAll(stderr)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return string(out)
	}
	applied := map[string]bool{} // the objects, each once even if the file held it twice
	for _, line := range strings.Split(strings.TrimSpace(kubectl("apply", "--server-side", "-f", path)), "\n") {
		applied[line] = true
	}
	kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd/simpletableservers.sts.tableserver.dev")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(stsv1alpha1.AddToScheme(scheme))
	c, err := client.New(admin.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	var deployments appsv1.DeploymentList
	if err := c.List(ctx, &deployments, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(deployments.Items) != 1 {
		t.Fatalf("%d Deployments in %s, want the manager's", len(deployments.Items), namespace)
	}
	manager := deployments.Items[0].Spec.Template.Spec
	var sa corev1.ServiceAccount
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: manager.ServiceAccountName}, &sa); err != nil {
		t.Errorf("the manager's ServiceAccount %s/%s: %v", namespace, manager.ServiceAccountName, err)
	}
	if image := manager.Containers[0].Image; os.Getenv("STS_INSTALL_YAML") == "" && image != "sts-operator:0.0.0-test" {
		t.Errorf("manager image = %q, want the version install-yaml.sh was given", image)
	}
	var bindings rbacv1.ClusterRoleBindingList
	if err := c.List(ctx, &bindings); err != nil {
		t.Fatal(err)
	}
	bound := false
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			bound = bound || (s.Kind == "ServiceAccount" && s.Namespace == namespace && s.Name == sa.Name)
		}
	}
	if !bound {
		t.Errorf("no ClusterRoleBinding binds ServiceAccount %s/%s", namespace, sa.Name)
	}
	var inDefault corev1.ServiceAccountList
	if err := c.List(ctx, &inDefault, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	for _, o := range inDefault.Items {
		if o.Name == sa.Name {
			t.Errorf("ServiceAccount %s landed in namespace default: install.yaml leaves its namespace unset", o.Name)
		}
	}

	load := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "load"}}
	if err := c.Create(ctx, load); err != nil {
		t.Fatal(err)
	}
	tableServer := &stsv1alpha1.SimpleTableServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "load", Name: "logins"},
		Spec: stsv1alpha1.SimpleTableServerSpec{Datasets: []stsv1alpha1.Dataset{{
			Name:      "logins.csv",
			ConfigMap: &stsv1alpha1.KeySelector{Name: "logins", Key: "logins.csv"},
		}}},
	}
	if err := c.Create(ctx, tableServer); err != nil {
		t.Fatalf("creating a SimpleTableServer after install.yaml: %v", err)
	}
	if got := kubectl("get", "stserver", "-n", "load", "-o", "name"); strings.TrimSpace(got) != "simpletableserver.sts.tableserver.dev/logins" {
		t.Errorf("kubectl get stserver = %q, want the resource just created", got)
	}
	// The category, through kubectl's own expansion, and the Ready condition's reason in a column.
	table := kubectl("get", "loadtest", "-n", "load")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if header := strings.Fields(lines[0]); len(lines) != 2 || len(header) < 3 || header[1] != "READY" || header[2] != "REASON" ||
		!strings.HasPrefix(lines[1], "logins ") {
		t.Errorf("kubectl get loadtest =\n%s\nwant the resource, with the columns NAME READY REASON first", table)
	}

	// kubectl prints "serverside-applied" for every object, changed or not: what shows a change
	// is the object's resourceVersion, which the API server moves on every write and only then.
	versions := func() map[string]string {
		t.Helper()
		out := kubectl("get", "-f", path, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}`)
		v := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			object, version, _ := strings.Cut(line, " ")
			v[object] = version
		}
		return v
	}
	before := versions()
	if len(before) != len(applied) {
		t.Fatalf("%d objects read back, %d applied:\n%v\n%v", len(before), len(applied), before, applied)
	}
	kubectl("apply", "--server-side", "-f", path)
	for object, version := range versions() {
		if version != before[object] {
			t.Errorf("applying install.yaml again changed %s (resourceVersion %s, then %s)", object, before[object], version)
		}
	}
}
