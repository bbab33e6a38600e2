package controller

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// TestAnUpgradedOperatorKeepsTheRunningImage: an operator with a new default image leaves a
// running server alone; spec.image and the restartedAt annotation are the ways to move it.
func TestAnUpgradedOperatorKeepsTheRunningImage(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	key := client.ObjectKeyFromObject(tableServer)
	deployment := func() *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
		s.get(t, d)
		return d
	}
	waitForImage := func(want string) {
		t.Helper()
		eventually(t, reconcileWait, func() error {
			if got := specs.RunningImage(deployment()); got != want {
				return fmt.Errorf("the Deployment runs %q, want %q", got, want)
			}
			return nil
		})
		s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
		// An annotation change leaves the generation as it is, so Ready can already hold for it
		// while status.image is written by the next reconcile: wait for that write.
		eventually(t, reconcileWait, func() error {
			cur := &stsv1alpha1.SimpleTableServer{}
			if err := s.k8s.Get(context.Background(), key, cur); err != nil {
				return err
			}
			if cur.Status.Image != want {
				return fmt.Errorf("status.image %q, want %q", cur.Status.Image, want)
			}
			return nil
		})
	}
	update := func(change func(*stsv1alpha1.SimpleTableServer)) {
		t.Helper()
		s.update(t, tableServer.DeepCopy(), change)
	}

	// The same operator code with another default image, reconciling the running server.
	before := deployment()
	upgraded := *s.reconciler
	upgraded.DefaultImage = "sts-operator:next"
	for range 2 {
		if _, err := upgraded.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	if after := deployment(); after.ResourceVersion != before.ResourceVersion || specs.RunningImage(after) != specstest.Image {
		t.Fatalf("the upgrade rewrote the Deployment (resourceVersion %s -> %s, image %q)", before.ResourceVersion, after.ResourceVersion, specs.RunningImage(after))
	}

	update(func(cur *stsv1alpha1.SimpleTableServer) { cur.Spec.Image = "registry.example/sts:pinned" })
	waitForImage("registry.example/sts:pinned")

	// Clearing spec.image keeps what runs: the operator's default is not forced on it.
	update(func(cur *stsv1alpha1.SimpleTableServer) { cur.Spec.Image = "" })
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
	if cur.Generation != 3 {
		t.Fatalf("generation %d after two spec changes", cur.Generation)
	}
	pinned := deployment()
	ts.waitPolls(t, 2)
	if after := deployment(); after.Generation != pinned.Generation || specs.RunningImage(after) != "registry.example/sts:pinned" {
		t.Fatalf("clearing spec.image moved the server to %q (generation %d -> %d)", specs.RunningImage(after), pinned.Generation, after.Generation)
	}

	// Asking for a restart moves it to the operator's default.
	update(func(cur *stsv1alpha1.SimpleTableServer) {
		cur.Annotations = map[string]string{stsv1alpha1.AnnotationRestartedAt: "2026-11-29T10:00:00Z"}
	})
	waitForImage(specstest.Image)
	if got := deployment().Spec.Template.Annotations[stsv1alpha1.AnnotationRestartedAt]; got != "2026-11-29T10:00:00Z" {
		t.Errorf("pod template restartedAt = %q", got)
	}
}
