package specs

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

func TestNetworkPolicy(t *testing.T) {
	peer := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "perf"}}}
	operator := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "sts-system"}}}
	tests := map[string]struct {
		policy    *stsv1alpha1.NetworkPolicy
		operator  string
		wantNone  bool
		wantPeers []networkingv1.NetworkPolicyPeer // nil: no ingress rule at all, nothing gets in
	}{
		"none asked":                 {wantNone: true},
		"the resource's peers":       {policy: &stsv1alpha1.NetworkPolicy{From: []networkingv1.NetworkPolicyPeer{peer}}, operator: "sts-system", wantPeers: []networkingv1.NetworkPolicyPeer{peer, operator}},
		"only the operator":          {policy: &stsv1alpha1.NetworkPolicy{}, operator: "sts-system", wantPeers: []networkingv1.NetworkPolicyPeer{operator}},
		"nobody: no operator to add": {policy: &stsv1alpha1.NetworkPolicy{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tableServer := specstest.New("logins", specstest.InNamespace("perf"), func(s *stsv1alpha1.SimpleTableServer) { s.Spec.NetworkPolicy = tc.policy })
			np := NetworkPolicy(tableServer, specstest.Image, tc.operator)
			if (np == nil) != tc.wantNone {
				t.Fatalf("policy %+v, want none: %t", np, tc.wantNone)
			}
			if np == nil {
				return
			}
			specstest.AssertOwnedBy(t, np.OwnerReferences, tableServer)
			if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, SelectorLabels(tableServer)) || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
				t.Errorf("policy selects %v for %v", np.Spec.PodSelector, np.Spec.PolicyTypes)
			}
			if tc.wantPeers == nil {
				if np.Spec.Ingress == nil || len(np.Spec.Ingress) != 0 {
					t.Errorf("ingress %+v, want an empty list: nothing gets in", np.Spec.Ingress)
				}
				return
			}
			if len(np.Spec.Ingress) != 1 || !reflect.DeepEqual(np.Spec.Ingress[0].From, tc.wantPeers) ||
				len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.StrVal != serverPortName {
				t.Errorf("ingress %+v, want from %+v to port %s only", np.Spec.Ingress, tc.wantPeers, serverPortName)
			}
		})
	}
}

func TestService(t *testing.T) {
	tableServer := specstest.New("logins", specstest.WithConfigMapDataset("users", "logins", "users"))
	tableServer.Spec.Service = stsv1alpha1.ServiceOptions{Type: corev1.ServiceTypeNodePort, Annotations: map[string]string{"lb": "internal", "team": "perf"}}
	svc := Service(tableServer, specstest.Image)
	specstest.AssertOwnedBy(t, svc.OwnerReferences, tableServer)
	if svc.Name != "logins" || svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Annotations["lb"] != "internal" {
		t.Errorf("service %s type %q annotations %v", svc.Name, svc.Spec.Type, svc.Annotations)
	}
	if got := svc.Annotations[ManagedAnnotationsAnnotation]; got != "lb,team" {
		t.Errorf("managed annotation keys %q, want the spec's, sorted", got)
	}
	if p := svc.Spec.Ports; len(p) != 1 || p[0].Name != "http" || p[0].Port != 9191 || p[0].TargetPort.StrVal != "http" {
		t.Errorf("ports %+v", p)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, Deployment(tableServer, specstest.Image, nil).Spec.Selector.MatchLabels) {
		t.Errorf("selector %v does not select the Deployment's pod", svc.Spec.Selector)
	}
	if len(tableServer.Spec.Service.Annotations) != 2 {
		t.Errorf("Service wrote into the resource's annotations map: %v", tableServer.Spec.Service.Annotations)
	}
	if a := Service(specstest.New("logins"), specstest.Image).Annotations; a[ManagedAnnotationsAnnotation] != "" || len(a) != 1 {
		t.Errorf("annotations without any in the spec: %v, want the spec hash only", a)
	}
}

func TestPersistentVolumeClaim(t *testing.T) {
	fast := "fast"
	tests := map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		wantNil     bool
		wantSize    string
		wantClass   *string
	}{
		"no storage":     {tableServer: specstest.New("a"), wantNil: true},
		"existing claim": {tableServer: specstest.New("a", specstest.WithExistingClaim("mine")), wantNil: true},
		"size":           {tableServer: specstest.New("a", specstest.WithStorageSize("2Gi", nil)), wantSize: "2Gi"},
		"size and class": {tableServer: specstest.New("a", specstest.WithStorageSize("10Gi", &fast)), wantSize: "10Gi", wantClass: &fast},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pvc := PersistentVolumeClaim(tc.tableServer, specstest.Image)
			if tc.wantNil {
				if pvc != nil {
					t.Fatalf("got a claim %+v", pvc)
				}
				return
			}
			specstest.AssertOwnedBy(t, pvc.OwnerReferences, tc.tableServer)
			got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
			if pvc.Name != "a-data" || got.Cmp(resource.MustParse(tc.wantSize)) != 0 ||
				!reflect.DeepEqual(pvc.Spec.StorageClassName, tc.wantClass) ||
				!slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
				t.Errorf("claim %s: %+v", pvc.Name, pvc.Spec)
			}
		})
	}
}

func TestServiceHashFollowsItsAnnotations(t *testing.T) {
	tableServer := specstest.New("a")
	before := Service(tableServer, specstest.Image).Annotations[SpecHashAnnotation]
	tableServer.Spec.Service.Annotations = map[string]string{"lb": "internal"}
	if Service(tableServer, specstest.Image).Annotations[SpecHashAnnotation] == before {
		t.Error("a new Service annotation keeps the hash, so the Service would never get it")
	}
}

func TestEveryBuiltObjectCarriesTheRecommendedLabels(t *testing.T) {
	const image = "registry.example:5000/sts/sts-operator:1.4.2"
	onClaim := specstest.New("logins", specstest.WithStorageSize("1Gi", nil),
		func(s *stsv1alpha1.SimpleTableServer) { s.Spec.NetworkPolicy = &stsv1alpha1.NetworkPolicy{} })
	onRedis := specstest.New("orders", specstest.WithRedis(specstest.RedisAt("redis:6379"), 3))
	want := func(tableServer *stsv1alpha1.SimpleTableServer) map[string]string {
		return map[string]string{
			"app.kubernetes.io/name":       "simpletableserver",
			"app.kubernetes.io/instance":   tableServer.Name,
			"app.kubernetes.io/component":  "table-server",
			"app.kubernetes.io/part-of":    "sts-operator",
			"app.kubernetes.io/managed-by": "sts-operator",
			"app.kubernetes.io/version":    "1.4.2",
		}
	}
	for name, tc := range map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		labels      map[string]string
	}{
		"Deployment":              {onClaim, Deployment(onClaim, image, nil).Labels},
		"Deployment's pods":       {onClaim, Deployment(onClaim, image, nil).Spec.Template.Labels},
		"Service":                 {onClaim, Service(onClaim, image).Labels},
		"PersistentVolumeClaim":   {onClaim, PersistentVolumeClaim(onClaim, image).Labels},
		"NetworkPolicy":           {onClaim, NetworkPolicy(onClaim, image, "sts-system").Labels},
		"PodDisruptionBudget":     {onRedis, PodDisruptionBudget(onRedis, image).Labels},
		"Deployment on Redis":     {onRedis, Deployment(onRedis, image, nil).Labels},
		"Redis-backed pods":       {onRedis, Deployment(onRedis, image, nil).Spec.Template.Labels},
		"Service on Redis":        {onRedis, Service(onRedis, image).Labels},
		"NetworkPolicy, no peers": {onRedis, NetworkPolicy(specstest.New("orders", func(s *stsv1alpha1.SimpleTableServer) { s.Spec.NetworkPolicy = &stsv1alpha1.NetworkPolicy{} }), image, "").Labels},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range want(tc.tableServer) {
				if tc.labels[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, tc.labels[k], v, tc.labels)
				}
			}
		})
	}
}

// An upgrade of the operator that brings the descriptive labels must not restart running
// servers: the pod template's new labels stay out of the spec hash, while the resource's own pod
// labels are in it and may set them.
func TestDescriptiveLabelsRestartNoServer(t *testing.T) {
	tableServer := specstest.New("logins")
	d := Deployment(tableServer, "sts:1", nil)
	withoutThem := d.DeepCopy()
	for _, k := range []string{componentLabel, partOfLabel, versionLabel} {
		delete(withoutThem.Spec.Template.Labels, k)
	}
	withoutThem.Annotations = nil // as the builder hashes: before the hash
	setSpecHash(&withoutThem.ObjectMeta, withoutThem.Spec)
	if d.Annotations[SpecHashAnnotation] != withoutThem.Annotations[SpecHashAnnotation] {
		t.Error("the descriptive pod labels are in the spec hash: an upgrade bringing them would restart every server")
	}
	own := Deployment(specstest.New("logins", specstest.WithPodLabels(map[string]string{partOfLabel: "checkout-load-test"})), "sts:1", nil)
	if own.Spec.Template.Labels[partOfLabel] != "checkout-load-test" || own.Annotations[SpecHashAnnotation] == d.Annotations[SpecHashAnnotation] {
		t.Errorf("pod labels %v: the resource's own part-of should win and change the hash", own.Spec.Template.Labels)
	}
}

func TestImageVersion(t *testing.T) {
	for image, want := range map[string]string{
		"sts-operator:0.1.0":                          "0.1.0",
		"registry.example:5000/team/sts:2.0-rc.1":     "2.0-rc.1",
		"registry.example:5000/team/sts":              "latest",
		"sts":                                         "latest",
		"sts:1.2@sha256:0123456789abcdef0123456789ab": "1.2",
		"sts@sha256:0123456789abcdef0123456789abcdef": "0123456789ab",
		"sts:" + strings.Repeat("v", 62) + "._x":      strings.Repeat("v", 62),
	} {
		if got := imageVersion(image); got != want {
			t.Errorf("imageVersion(%q) = %q, want %q", image, got, want)
		}
		if errs := validation.IsValidLabelValue(imageVersion(image)); len(errs) > 0 {
			t.Errorf("imageVersion(%q) is no label value: %v", image, errs)
		}
	}
}
