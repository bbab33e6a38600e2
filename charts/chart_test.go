// Package charts holds the Helm chart (sts-operator/) and the tests that render it with the
// pinned Helm and check the objects a cluster admin reviews: the RBAC, the metrics endpoint,
// the manager's flags. hack/chart-test.sh checks the rest (lint, generated templates, refused
// values).
package charts

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

const releaseNamespace = "sts-system"

// rendered are the objects `helm template` makes of the chart with some values.
type rendered []*unstructured.Unstructured

// render runs helm template with args (--set and -f flags); $HELM names the binary, which
// `make test` sets to the pinned one.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		testutil.Skip(t, "HELM is not set; `make test` and `make chart-test` set it to the pinned Helm")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm, append([]string{"template", "sts", "sts-operator", "--namespace", releaseNamespace}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
	}
	var objs rendered
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if u.Object != nil {
			objs = append(objs, &u)
		}
	}
}

// all decodes every object of kind, refusing fields its type does not have.
func all[T any](t *testing.T, objs rendered, kind string) []T {
	t.Helper()
	var out []T
	for _, o := range objs {
		if o.GetKind() == kind {
			var v T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &v, true); err != nil {
				t.Fatalf("%s %s: %v", kind, o.GetName(), err)
			}
			out = append(out, v)
		}
	}
	return out
}

// manager is the manager container of the rendered Deployment.
func manager(t *testing.T, objs rendered) corev1.Container {
	t.Helper()
	deployments := all[appsv1.Deployment](t, objs, "Deployment")
	if len(deployments) != 1 || len(deployments[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one Deployment of one container, got %+v", deployments)
	}
	return deployments[0].Spec.Template.Spec.Containers[0]
}

// flag is the value of the manager's --name=value argument, and whether it has one.
func flag(c corev1.Container, name string) (string, bool) {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// grants says whether rules allow verb on resource (of any API group).
func grants(rules []rbacv1.PolicyRule, resource string) bool {
	for _, r := range rules {
		if slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*") {
			return true
		}
	}
	return false
}

// sensitive are what the operator must not read or write cluster-wide when it watches only
// some namespaces.
var sensitive = []string{"secrets", "configmaps", "deployments", "services", "pods", "persistentvolumeclaims", "networkpolicies", "poddisruptionbudgets"}

func TestWatchNamespacesGrantRolesInThoseNamespacesOnly(t *testing.T) {
	objs := render(t, "--set", "watchNamespaces={team-a,team-b}")
	if v, _ := flag(manager(t, objs), "watch-namespaces"); v != "team-a,team-b" {
		t.Errorf("--watch-namespaces=%q, want team-a,team-b", v)
	}
	for _, r := range all[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		for _, res := range sensitive {
			if grants(r.Rules, res) {
				t.Errorf("ClusterRole %s grants %s cluster-wide", r.Name, res)
			}
		}
	}
	for _, b := range all[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		if b.RoleRef.Name != "sts-sts-operator-metrics-auth" {
			t.Errorf("ClusterRoleBinding %s binds %s: only the metrics reviews should be cluster-wide", b.Name, b.RoleRef.Name)
		}
	}
	// Each watched namespace has the manager's rules, bound to its service account; the
	// release namespace only leader election's.
	roles := map[string]rbacv1.Role{}
	for _, r := range all[rbacv1.Role](t, objs, "Role") {
		roles[r.Namespace+"/"+r.Name] = r
		if r.Namespace != "team-a" && r.Namespace != "team-b" && grants(r.Rules, "secrets") {
			t.Errorf("Role %s/%s grants secrets outside the watched namespaces", r.Namespace, r.Name)
		}
	}
	bound := map[string]bool{}
	for _, b := range all[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Name == "sts-sts-operator" && s.Namespace == releaseNamespace && b.RoleRef.Kind == "Role" {
				bound[b.Namespace+"/"+b.RoleRef.Name] = true
			}
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		key := ns + "/sts-sts-operator"
		if r, ok := roles[key]; !ok || !grants(r.Rules, "secrets") || !grants(r.Rules, "deployments") || !grants(r.Rules, "simpletableservers") {
			t.Errorf("no Role %s with the manager's rules: %+v", key, r.Rules)
		}
		if !bound[key] {
			t.Errorf("Role %s is not bound to the operator's service account", key)
		}
	}
	if !bound[releaseNamespace+"/sts-sts-operator-leader-election"] {
		t.Error("leader election's Role in the release namespace is not bound")
	}
}

func TestEveryNamespaceByDefaultWithAClusterRole(t *testing.T) {
	objs := render(t)
	if v, ok := flag(manager(t, objs), "watch-namespaces"); ok {
		t.Errorf("--watch-namespaces=%q by default", v)
	}
	var clusterWide bool
	for _, r := range all[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		clusterWide = clusterWide || r.Name == "sts-sts-operator" && grants(r.Rules, "secrets") && grants(r.Rules, "deployments")
	}
	if !clusterWide {
		t.Error("no ClusterRole with the manager's rules")
	}
	for _, r := range all[rbacv1.Role](t, objs, "Role") {
		if r.Name == "sts-sts-operator" {
			t.Errorf("a namespaced manager Role in %s without watchNamespaces", r.Namespace)
		}
	}
}

func TestMetricsAreHTTPSForAllowedTokensByDefault(t *testing.T) {
	objs := render(t, "--set", "metrics.serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=true",
		"--set", "metrics.readers[0].name=prometheus-k8s", "--set", "metrics.readers[0].namespace=monitoring")
	c := manager(t, objs)
	if v, _ := flag(c, "metrics-bind-address"); v != ":8443" || slices.Contains(c.Args, "--metrics-secure=false") {
		t.Errorf("manager args %v, want metrics on :8443, secure", c.Args)
	}
	if len(c.Ports) == 0 || c.Ports[0].Name != "https-metrics" || c.Ports[0].ContainerPort != 8443 {
		t.Errorf("container ports %+v, want https-metrics 8443", c.Ports)
	}
	svc := all[corev1.Service](t, objs, "Service")
	if len(svc) != 1 || len(svc[0].Spec.Ports) != 1 || svc[0].Spec.Ports[0].Port != 8443 || svc[0].Spec.Ports[0].TargetPort.StrVal != "https-metrics" {
		t.Errorf("metrics Service %+v, want port 8443 to https-metrics", svc)
	}
	np := all[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
	if len(np) != 1 || np[0].Spec.Ingress[0].Ports[0].Port.StrVal != "https-metrics" {
		t.Errorf("NetworkPolicy %+v does not open the metrics port by its name", np)
	}
	endpoint := serviceMonitorEndpoint(t, objs)
	if endpoint["scheme"] != "https" || endpoint["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
		endpoint["port"] != "https-metrics" {
		t.Errorf("ServiceMonitor endpoint %v, want https with the service account token", endpoint)
	}
	if tls, _ := endpoint["tlsConfig"].(map[string]any); tls["insecureSkipVerify"] != true {
		t.Errorf("tlsConfig %v: the self-signed certificate cannot be verified", tls)
	}

	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range all[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		roles[r.Name] = r
	}
	reader := roles["sts-sts-operator-metrics-reader"].Rules
	if len(reader) != 1 || !slices.Equal(reader[0].NonResourceURLs, []string{"/metrics"}) || !slices.Equal(reader[0].Verbs, []string{"get"}) {
		t.Errorf("metrics-reader rules %+v, want get /metrics only", reader)
	}
	if auth := roles["sts-sts-operator-metrics-auth"].Rules; !grants(auth, "tokenreviews") || !grants(auth, "subjectaccessreviews") {
		t.Errorf("metrics-auth rules %+v, want tokenreviews and subjectaccessreviews", auth)
	}
	bindings := map[string][]rbacv1.Subject{}
	for _, b := range all[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		bindings[b.RoleRef.Name] = b.Subjects
	}
	if s := bindings["sts-sts-operator-metrics-auth"]; len(s) != 1 || s[0].Name != "sts-sts-operator" {
		t.Errorf("metrics-auth bound to %+v, want the operator's service account", s)
	}
	if s := bindings["sts-sts-operator-metrics-reader"]; len(s) != 1 || s[0].Name != "prometheus-k8s" || s[0].Namespace != "monitoring" {
		t.Errorf("metrics-reader bound to %+v, want metrics.readers", s)
	}
}

func TestMetricsCertificateFromASecret(t *testing.T) {
	objs := render(t, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.certSecret=operator-metrics-tls")
	d := all[appsv1.Deployment](t, objs, "Deployment")[0]
	c := d.Spec.Template.Spec.Containers[0]
	dir, _ := flag(c, "metrics-cert-dir")
	if dir == "" || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != dir || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("--metrics-cert-dir=%q, mounts %+v: want the Secret mounted read-only there", dir, c.VolumeMounts)
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != "operator-metrics-tls" {
		t.Errorf("volumes %+v, want the Secret operator-metrics-tls", v)
	}
	tls, _ := serviceMonitorEndpoint(t, objs)["tlsConfig"].(map[string]any)
	ca, _ := tls["ca"].(map[string]any)
	if tls["insecureSkipVerify"] != nil || tls["serverName"] != "sts-sts-operator-metrics.sts-system.svc" ||
		ca["secret"].(map[string]any)["name"] != "operator-metrics-tls" {
		t.Errorf("tlsConfig %v, want the certificate checked against the Secret's ca.crt", tls)
	}
}

func TestPlainHTTPMetricsOnlyWhenAsked(t *testing.T) {
	objs := render(t, "--set", "metrics.secure=false", "--set", "metrics.serviceMonitor.enabled=true")
	c := manager(t, objs)
	if v, _ := flag(c, "metrics-bind-address"); v != ":8080" || !slices.Contains(c.Args, "--metrics-secure=false") {
		t.Errorf("manager args %v, want --metrics-secure=false on :8080", c.Args)
	}
	if endpoint := serviceMonitorEndpoint(t, objs); endpoint["scheme"] != nil || endpoint["bearerTokenFile"] != nil || endpoint["port"] != "http-metrics" {
		t.Errorf("ServiceMonitor endpoint %v, want plain http", endpoint)
	}
	for _, r := range all[rbacv1.ClusterRole](t, objs, "ClusterRole") {
		if strings.Contains(r.Name, "metrics") {
			t.Errorf("ClusterRole %s without secure metrics", r.Name)
		}
	}
}

func serviceMonitorEndpoint(t *testing.T, objs rendered) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "ServiceMonitor" {
			endpoints, _, _ := unstructured.NestedSlice(o.Object, "spec", "endpoints")
			if len(endpoints) == 1 {
				return endpoints[0].(map[string]any)
			}
		}
	}
	t.Fatal("no ServiceMonitor with one endpoint")
	return nil
}

func TestTableServerDefaultsReachTheManager(t *testing.T) {
	values := `
tableServer:
  image: registry.example/sts:1.0
tableServerDefaults:
  image: registry.example/sts:2.0
  imagePullPolicy: Always
  imagePullSecrets: [{name: registry}]
  resources: {requests: {cpu: 250m}, limits: {memory: 2Gi}}
  podSecurityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  nodeSelector: {pool: load}
  tolerations: [{key: load, operator: Exists, effect: NoSchedule}]
  priorityClassName: load-high
  podLabels: {team: perf}
  service: {type: LoadBalancer, annotations: {lb: internal}}
`
	file := t.TempDir() + "/values.yaml"
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	c := manager(t, render(t, "-f", file))
	v, ok := flag(c, "table-server-defaults")
	if !ok {
		t.Fatalf("no --table-server-defaults in %v", c.Args)
	}
	// Decoded as the manager decodes it: strictly.
	var d specs.Defaults
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("--table-server-defaults=%s: %v", v, err)
	}
	if d.ImagePullPolicy != corev1.PullAlways || d.ImagePullSecrets[0].Name != "registry" || d.Resources.Requests.Cpu().String() != "250m" ||
		d.Resources.Limits.Memory().String() != "2Gi" || d.PodSecurityContext == nil || d.NodeSelector["pool"] != "load" ||
		len(d.Tolerations) != 1 || d.PriorityClassName != "load-high" || d.PodLabels["team"] != "perf" ||
		d.Service.Type != corev1.ServiceTypeLoadBalancer || d.Service.Annotations["lb"] != "internal" {
		t.Errorf("defaults the manager gets: %+v", d)
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "STS_IMAGE" }); i < 0 || c.Env[i].Value != "registry.example/sts:2.0" {
		t.Errorf("env %+v: want STS_IMAGE from tableServerDefaults.image, over tableServer.image", c.Env)
	}
	if v, ok := flag(manager(t, render(t)), "table-server-defaults"); ok {
		t.Errorf("--table-server-defaults=%s without any default", v)
	}
}
