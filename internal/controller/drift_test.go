package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// TestHandEditsAreReverted: edits to the fields the operator owns are put back, even though the
// spec hash annotation still matches: a Service turned into an ExternalName pointing elsewhere
// (it would carry the injectors' bearer token away), and a table server started without its
// token. Fields others add (an annotation) stay.
func TestHandEditsAreReverted(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	s.rollouts.in(t, ns)
	s.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"}, Data: map[string][]byte{"token": []byte("s3cret")}})
	tableServer := specstest.New("tables", specstest.InNamespace(ns), specstest.WithAuthToken("token", "token"))
	tableServer.UID = ""
	s.create(t, tableServer)
	key := client.ObjectKey{Namespace: ns, Name: "tables"}

	svc := &corev1.Service{}
	eventually(t, reconcileWait, func() error { return s.k8s.Get(context.Background(), key, svc) })
	// The selector and ports stay: only the type and where it points change.
	svc.Spec.Type, svc.Spec.ExternalName = corev1.ServiceTypeExternalName, "collector.attacker.example"
	svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy, svc.Spec.InternalTrafficPolicy = "", nil, nil, nil, nil
	svc.Annotations["team"] = "perf"
	if err := s.k8s.Update(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, reconcileWait, func() error {
		if err := s.k8s.Get(context.Background(), key, svc); err != nil {
			return err
		}
		if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.ExternalName != "" || !maps.Equal(svc.Spec.Selector, specs.SelectorLabels(tableServer)) ||
			len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != specs.ServerPort {
			return fmt.Errorf("the Service is still %+v", svc.Spec)
		}
		return nil
	})
	if svc.Annotations["team"] != "perf" {
		t.Errorf("an annotation someone else set was removed: %v", svc.Annotations)
	}

	d := &appsv1.Deployment{}
	eventually(t, reconcileWait, func() error { // again while the operator or the rollout changed it meanwhile
		if err := s.k8s.Get(context.Background(), key, d); err != nil {
			return err
		}
		c := &d.Spec.Template.Spec.Containers[0]
		c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return a == "--metrics-auth" || a == "--auth-token-file=/var/run/sts/auth/token" })
		return s.k8s.Update(context.Background(), d)
	})
	eventually(t, reconcileWait, func() error {
		if err := s.k8s.Get(context.Background(), key, d); err != nil {
			return err
		}
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--auth-token-file=/var/run/sts/auth/token") || !slices.Contains(args, "--metrics-auth") {
			return fmt.Errorf("the table server still runs with %q", args)
		}
		return nil
	})
	eventually(t, reconcileWait, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeNormal, "Updated", "Deployment tables")
	})
}

// TestUnreadableSourceIsACondition: when the API server refuses to hand over a ConfigMap that
// changed, the resource says so (Stalled, SourceUnreadable, with an event) instead of keeping a
// status that says nothing happened, and Ready keeps what it knew: the server still serves.
func TestUnreadableSourceIsACondition(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, _ := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\n"})
	s.reconciler.APIReader.(*countingReader).failIn(t, tableServer.Namespace,
		apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "users", errors.New("RBAC: access denied")))
	s.updateConfigMap(t, tableServer.Namespace, "users", "n1\n")
	cur := s.waitForMessage(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonSourceUnreadable,
		`while getting ConfigMap "users"`, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v: the server still serves", c)
	}
	eventually(t, reconcileWait, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonSourceUnreadable, "grant the operator")
	})
}

// TestNetworkPolicyFollowsTheSpec: the operator makes the policy when asked, lets itself in, and
// deletes it when the resource no longer asks.
func TestNetworkPolicyFollowsTheSpec(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	tableServer := specstest.New("tables", specstest.InNamespace(ns), func(s *stsv1alpha1.SimpleTableServer) { s.Spec.NetworkPolicy = &stsv1alpha1.NetworkPolicy{} })
	tableServer.UID = ""
	s.create(t, tableServer)
	key := client.ObjectKey{Namespace: ns, Name: "tables"}
	np := &networkingv1.NetworkPolicy{}
	eventually(t, reconcileWait, func() error { return s.k8s.Get(context.Background(), key, np) })
	if len(np.Spec.Ingress) != 1 || np.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "sts-system" {
		t.Errorf("ingress %+v, want the operator's namespace let in", np.Spec.Ingress)
	}
	s.update(t, tableServer, func(tableServer *stsv1alpha1.SimpleTableServer) { tableServer.Spec.NetworkPolicy = nil })
	eventually(t, reconcileWait, func() error {
		if err := s.k8s.Get(context.Background(), key, np); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the policy is still there: %v", err)
		}
		return nil
	})
}
