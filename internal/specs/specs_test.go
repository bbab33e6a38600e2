package specs

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
			sts := specstest.New("logins", specstest.InNamespace("perf"), func(s *stsv1alpha1.SimpleTableServer) { s.Spec.NetworkPolicy = tc.policy })
			np := NetworkPolicy(sts, tc.operator)
			if (np == nil) != tc.wantNone {
				t.Fatalf("policy %+v, want none: %t", np, tc.wantNone)
			}
			if np == nil {
				return
			}
			specstest.AssertOwnedBy(t, np.OwnerReferences, sts)
			if !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, SelectorLabels(sts)) || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
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
	sts := specstest.New("logins", specstest.WithConfigMapDataset("users", "logins", "users"))
	sts.Spec.Service = stsv1alpha1.ServiceOptions{Type: corev1.ServiceTypeNodePort, Annotations: map[string]string{"lb": "internal", "team": "perf"}}
	svc := Service(sts)
	specstest.AssertOwnedBy(t, svc.OwnerReferences, sts)
	if svc.Name != "logins" || svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Annotations["lb"] != "internal" {
		t.Errorf("service %s type %q annotations %v", svc.Name, svc.Spec.Type, svc.Annotations)
	}
	if got := svc.Annotations[ManagedAnnotationsAnnotation]; got != "lb,team" {
		t.Errorf("managed annotation keys %q, want the spec's, sorted", got)
	}
	if p := svc.Spec.Ports; len(p) != 1 || p[0].Name != "http" || p[0].Port != 9191 || p[0].TargetPort.StrVal != "http" {
		t.Errorf("ports %+v", p)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, Deployment(sts, specstest.Image).Spec.Selector.MatchLabels) {
		t.Errorf("selector %v does not select the Deployment's pod", svc.Spec.Selector)
	}
	if len(sts.Spec.Service.Annotations) != 2 {
		t.Errorf("Service wrote into the resource's annotations map: %v", sts.Spec.Service.Annotations)
	}
	if a := Service(specstest.New("logins")).Annotations; a[ManagedAnnotationsAnnotation] != "" || len(a) != 1 {
		t.Errorf("annotations without any in the spec: %v, want the spec hash only", a)
	}
}

func TestPersistentVolumeClaim(t *testing.T) {
	fast := "fast"
	tests := map[string]struct {
		sts       *stsv1alpha1.SimpleTableServer
		wantNil   bool
		wantSize  string
		wantClass *string
	}{
		"no storage":     {sts: specstest.New("a"), wantNil: true},
		"existing claim": {sts: specstest.New("a", specstest.WithExistingClaim("mine")), wantNil: true},
		"size":           {sts: specstest.New("a", specstest.WithStorageSize("2Gi", nil)), wantSize: "2Gi"},
		"size and class": {sts: specstest.New("a", specstest.WithStorageSize("10Gi", &fast)), wantSize: "10Gi", wantClass: &fast},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pvc := PersistentVolumeClaim(tc.sts)
			if tc.wantNil {
				if pvc != nil {
					t.Fatalf("got a claim %+v", pvc)
				}
				return
			}
			specstest.AssertOwnedBy(t, pvc.OwnerReferences, tc.sts)
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
	sts := specstest.New("a")
	before := Service(sts).Annotations[SpecHashAnnotation]
	sts.Spec.Service.Annotations = map[string]string{"lb": "internal"}
	if Service(sts).Annotations[SpecHashAnnotation] == before {
		t.Error("a new Service annotation keeps the hash, so the Service would never get it")
	}
}
