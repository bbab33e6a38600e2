// Package config holds the kustomize manifests (crd, rbac, manager, default, samples) and the
// tests that render them as `kubectl apply -k` would.
package config

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

const operatorNamespace = "sts-operator-system"

// render builds a kustomization from disk with the options `kubectl kustomize` uses.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, res := range resMap.Resources() {
		m, err := res.Map()
		if err != nil {
			t.Fatalf("%s: %v", res.CurId(), err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// find returns the object of that kind and name, failing the test when there is none.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %q rendered", kind, name)
	return nil
}

// decode converts u into a typed object, rejecting fields the type does not have (a typo in a
// manifest would otherwise be dropped silently by the API server).
func decode(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func ofKind[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) []T {
	t.Helper()
	var out []T
	for _, o := range objs {
		if o.GetKind() == kind {
			var v T
			decode(t, o, &v)
			out = append(out, v)
		}
	}
	return out
}

func TestDefaultRendersTheOperator(t *testing.T) {
	objs := render(t, "default")

	find(t, objs, "Namespace", operatorNamespace)
	find(t, objs, "CustomResourceDefinition", "simpletableservers.sts.tableserver.dev")
	find(t, objs, "ClusterRole", "sts-operator-manager-role")
	find(t, objs, "ServiceAccount", "sts-operator-controller-manager")
	clusterScoped := []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
	for _, o := range objs {
		if !slices.Contains(clusterScoped, o.GetKind()) && o.GetNamespace() != operatorNamespace {
			t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), operatorNamespace)
		}
	}

	var deploy appsv1.Deployment
	decode(t, find(t, objs, "Deployment", "sts-operator-controller-manager"), &deploy)
	pod := deploy.Spec.Template.Spec
	if pod.ServiceAccountName != "sts-operator-controller-manager" {
		t.Errorf("serviceAccountName = %q, want the prefixed sts-operator-controller-manager", pod.ServiceAccountName)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot and seccomp RuntimeDefault", sc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("containers = %d, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext = %+v, want read-only root, no privilege escalation, drop ALL", sc)
	}
	for _, arg := range []string{"--leader-elect", "--metrics-bind-address=:8443", "--health-probe-bind-address=:8081"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes = %+v / %+v, want /healthz and /readyz", c.LivenessProbe, c.ReadinessProbe)
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "STS_IMAGE" }); i < 0 || c.Env[i].Value != c.Image {
		t.Errorf("env %v: want STS_IMAGE equal to the manager image %s", c.Env, c.Image)
	}

	// The service account must be bound to the generated role and to a leader-election role.
	boundTo := map[string]bool{}
	for _, b := range append(ofKind[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding"), roleBindingsAsCluster(ofKind[rbacv1.RoleBinding](t, objs, "RoleBinding"))...) {
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Name == pod.ServiceAccountName && s.Namespace == operatorNamespace {
				boundTo[b.RoleRef.Kind+"/"+b.RoleRef.Name] = true
			}
		}
	}
	if !boundTo["ClusterRole/sts-operator-manager-role"] {
		t.Errorf("no ClusterRoleBinding gives %s/%s the manager role; bindings to: %v", operatorNamespace, pod.ServiceAccountName, boundTo)
	}
	leases := false
	for _, r := range ofKind[rbacv1.Role](t, objs, "Role") {
		for _, rule := range r.Rules {
			if boundTo["Role/"+r.Name] && slices.Contains(rule.APIGroups, "coordination.k8s.io") && slices.Contains(rule.Resources, "leases") {
				leases = true
			}
		}
	}
	if !leases {
		t.Error("the service account has no Role on coordination.k8s.io leases: --leader-elect would fail")
	}
}

// roleBindingsAsCluster lets RoleBindings be checked with ClusterRoleBindings: only the
// subjects and the role they point at matter here.
func roleBindingsAsCluster(rbs []rbacv1.RoleBinding) []rbacv1.ClusterRoleBinding {
	out := make([]rbacv1.ClusterRoleBinding, 0, len(rbs))
	for _, rb := range rbs {
		out = append(out, rbacv1.ClusterRoleBinding{ObjectMeta: rb.ObjectMeta, Subjects: rb.Subjects, RoleRef: rb.RoleRef})
	}
	return out
}

// sampleDirs are the kustomizations of SimpleTableServers that users apply as they are: the
// samples here and the one the load-test examples expect.
var sampleDirs = []string{"samples", "samples/redis", "../examples"}

// TestSamplesShipTheirSources checks that every dataset, token and claim a sample
// SimpleTableServer names is shipped with it, and that the samples show each kind of source.
func TestSamplesShipTheirSources(t *testing.T) {
	for _, dir := range sampleDirs {
		t.Run(dir, func(t *testing.T) {
			sources := checkSources(t, render(t, dir))
			if dir != "samples" {
				return
			}
			for _, kind := range []string{"configMap", "secret", "persistentVolumeClaim"} {
				if !sources[kind] {
					t.Errorf("no sample SimpleTableServer reads a dataset from a %s", kind)
				}
			}
		})
	}
}

// checkSources reports each reference from a SimpleTableServer in objs to an object not in
// objs, and returns the kinds of dataset source used.
func checkSources(t *testing.T, objs []*unstructured.Unstructured) map[string]bool {
	t.Helper()
	configMaps := map[string]corev1.ConfigMap{}
	for _, cm := range ofKind[corev1.ConfigMap](t, objs, "ConfigMap") {
		configMaps[cm.Name] = cm
	}
	secretKeys := map[string][]string{}
	for _, s := range ofKind[corev1.Secret](t, objs, "Secret") {
		for k := range s.StringData {
			secretKeys[s.Name] = append(secretKeys[s.Name], k)
		}
		for k := range s.Data {
			secretKeys[s.Name] = append(secretKeys[s.Name], k)
		}
	}
	claims := map[string]bool{}
	for _, pvc := range ofKind[corev1.PersistentVolumeClaim](t, objs, "PersistentVolumeClaim") {
		claims[pvc.Name] = true
	}

	servers := ofKind[stsv1alpha1.SimpleTableServer](t, objs, "SimpleTableServer")
	if len(servers) == 0 {
		t.Error("no SimpleTableServer rendered")
	}
	sources := map[string]bool{}
	for _, s := range servers {
		for _, d := range s.Spec.Datasets {
			switch {
			case d.ConfigMap != nil:
				sources["configMap"] = true
				if _, ok := configMaps[d.ConfigMap.Name].Data[d.ConfigMap.Key]; !ok {
					t.Errorf("%s dataset %s: ConfigMap %s key %s is not shipped with it", s.Name, d.Name, d.ConfigMap.Name, d.ConfigMap.Key)
				}
			case d.Secret != nil:
				sources["secret"] = true
				if !slices.Contains(secretKeys[d.Secret.Name], d.Secret.Key) {
					t.Errorf("%s dataset %s: Secret %s key %s is not shipped with it", s.Name, d.Name, d.Secret.Name, d.Secret.Key)
				}
			case d.PersistentVolumeClaim != nil:
				sources["persistentVolumeClaim"] = true
				if !claims[d.PersistentVolumeClaim.ClaimName] {
					t.Errorf("%s dataset %s: claim %s is not shipped with it", s.Name, d.Name, d.PersistentVolumeClaim.ClaimName)
				}
			}
		}
		if tok := s.Spec.Server.AuthTokenSecret; tok != nil && !slices.Contains(secretKeys[tok.Name], tok.Key) {
			t.Errorf("%s: token Secret %s key %s is not shipped with it", s.Name, tok.Name, tok.Key)
		}
	}
	return sources
}

// TestSamplesAcceptedByAPIServer creates every sample and example in a real API server with the generated
// CRD, so its schema and CEL rules judge them. `make test` provides the control plane.
func TestSamplesAcceptedByAPIServer(t *testing.T) {
	cfg := startAPIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, dir := range sampleDirs {
		ns := &corev1.Namespace{}
		ns.Name = fmt.Sprintf("samples-%d", i)
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		for _, obj := range render(t, dir) {
			obj.SetNamespace(ns.Name)
			if err := c.Create(ctx, obj); err != nil {
				t.Errorf("%s: creating %s %s: %v", dir, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
}

// startAPIServer starts a kube-apiserver and etcd with the generated CRD installed, stopped when
// the test ends; it skips the test when `make test` did not provide them.
func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		testutil.Skip(t, "KUBEBUILDER_ASSETS is not set; `make test` builds the control plane and sets it")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{"crd/bases"}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	return cfg
}
