package controller

import (
	"context"
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// TestAnUpgradeLabelsRunningObjectsWithoutARestart: objects made by an operator that set only
// the selector and managed-by labels get the whole set, and the running pods are not replaced
// for it (their template keeps its labels until the next rollout).
func TestAnUpgradeLabelsRunningObjectsWithoutARestart(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, _ := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	ctx := context.Background()
	key := client.ObjectKeyFromObject(tableServer)
	old := map[string]string{"app.kubernetes.io/name": "simpletableserver", "app.kubernetes.io/instance": tableServer.Name, specs.ManagedByLabel: specs.ManagedByValue}
	asAnOlderOperatorMadeIt := func(obj client.Object) {
		eventually(t, reconcileWait, func() error {
			if err := s.k8s.Get(ctx, key, obj); err != nil {
				return err
			}
			obj.SetLabels(maps.Clone(old))
			if d, ok := obj.(*appsv1.Deployment); ok {
				d.Spec.Template.Labels = maps.Clone(old)
			}
			return s.k8s.Update(ctx, obj)
		})
	}
	d, svc := &appsv1.Deployment{}, &corev1.Service{}
	asAnOlderOperatorMadeIt(d)
	asAnOlderOperatorMadeIt(svc)
	template := d.Spec.Template.DeepCopy()

	want := specs.ObjectLabels(tableServer, specstest.Image)
	eventually(t, reconcileWait, func() error {
		if _, err := s.reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			return err
		}
		for _, obj := range []client.Object{d, svc} {
			if err := s.k8s.Get(ctx, key, obj); err != nil {
				return err
			}
			if !maps.Equal(obj.GetLabels(), want) {
				return fmt.Errorf("%T labels %v, want %v", obj, obj.GetLabels(), want)
			}
		}
		return nil
	})
	if !equality.Semantic.DeepEqual(d.Spec.Template, *template) {
		t.Errorf("the pod template changed, which replaces the pods:\n%+v\nwas\n%+v", d.Spec.Template.ObjectMeta, template.ObjectMeta)
	}
	if got := d.Spec.Template.Labels; !maps.Equal(got, old) {
		t.Errorf("pod template labels %v, want the older operator's %v until the next rollout", got, old)
	}
}
