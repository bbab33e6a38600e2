package controller

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// While clients change the lists all the time, as in a load test, the server is still asked for
// its STATUS once per refresh interval: the operator's own status writes do not make it ask again.
func TestStatusPollingKeepsItsIntervalWhileListsChange(t *testing.T) {
	s := requireEnvtest(t)
	_, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\n"}) // refresh interval 1s
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			_ = ts.store.Add(context.Background(), "orders", strconv.Itoa(i), store.Last, false)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-done })

	ts.waitPolls(t, 2) // the first change of lists is seen and written
	// Three polls cannot come in less than two intervals; a loaded machine only spaces them more.
	start := time.Now()
	ts.waitPolls(t, 3)
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("3 STATUS requests in %v at a 1s refresh interval while the lists changed", took)
	}
}

// A Deployment scaled or edited by hand so that two table servers could run is put back: two
// servers behind one Service would hand out the same lines twice.
func TestADeploymentScaledByHandIsPutBack(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, _ := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = tableServer.Namespace, tableServer.Name
	s.get(t, d)
	d.Spec.Replicas = ptr.To[int32](2)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	if err := s.k8s.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{}
	svc.Namespace, svc.Name = tableServer.Namespace, tableServer.Name
	s.get(t, svc)
	svc.Spec.Selector = map[string]string{"app": "something-else"}
	if err := s.k8s.Update(context.Background(), svc); err != nil {
		t.Fatal(err)
	}

	eventually(t, reconcileWait, func() error {
		s.get(t, d)
		s.get(t, svc)
		if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			return fmt.Errorf("replicas %d, strategy %s", *d.Spec.Replicas, d.Spec.Strategy.Type)
		}
		if want := specs.SelectorLabels(tableServer); !maps.Equal(svc.Spec.Selector, want) {
			return fmt.Errorf("Service selector %v, want %v", svc.Spec.Selector, want)
		}
		return nil
	})
}

// A resource being deleted is left to the garbage collector: the operator does not recreate
// the objects it removes (under foreground deletion they go first, while the resource stays).
func TestAResourceBeingDeletedIsNotRebuilt(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, _ := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	const hold = "test.sts.tableserver.dev/hold"
	s.get(t, tableServer)
	tableServer.Finalizers = append(tableServer.Finalizers, hold)
	if err := s.k8s.Update(context.Background(), tableServer); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur := tableServer.DeepCopy()
		if err := s.k8s.Get(context.Background(), client.ObjectKeyFromObject(tableServer), cur); err == nil {
			cur.Finalizers = nil
			_ = s.k8s.Update(context.Background(), cur)
		}
	})
	if err := s.k8s.Delete(context.Background(), tableServer); err != nil {
		t.Fatal(err)
	}
	// Once the operator's cache shows the deletion (a reconcile that read the resource before it
	// may still run, and rebuild what it finds missing, as on any cluster)...
	eventually(t, reconcileWait, func() error {
		cur := &stsv1alpha1.SimpleTableServer{}
		if err := s.reconciler.Get(context.Background(), client.ObjectKeyFromObject(tableServer), cur); err != nil {
			return err
		}
		if cur.DeletionTimestamp.IsZero() {
			return fmt.Errorf("the operator's cache does not show the deletion yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // ...and a reconcile that started before it has ended,
	// envtest runs no garbage collector: the test removes the children as it would.
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		obj.SetNamespace(tableServer.Namespace)
		obj.SetName(tableServer.Name)
		if err := s.k8s.Delete(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}

	time.Sleep(3 * time.Second) // three refresh intervals
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		err := s.k8s.Get(context.Background(), client.ObjectKey{Namespace: tableServer.Namespace, Name: tableServer.Name}, obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T of a resource being deleted: %v, want it not recreated", obj, err)
		}
	}
}

// ConfigMaps and Secrets are cached as metadata only (a cluster may hold many large ones); the
// content of a dataset's ConfigMap is read from the API server once, and again only when it
// changes, not at every poll.
func TestASourceIsReadFromTheAPIServerOnlyWhenItChanges(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\n"}) // ConfigMap "users", refresh 1s
	reader := s.reconciler.APIReader.(*countingReader)
	key := client.ObjectKey{Namespace: tableServer.Namespace, Name: "users"}
	before := reader.readsOf(key)
	if before == 0 {
		t.Fatal("the ConfigMap was never read from the API server")
	}
	ts.waitPolls(t, 3)
	if n := reader.readsOf(key) - before; n != 0 {
		t.Errorf("%d reads of an unchanged ConfigMap in three polls", n)
	}
	s.updateConfigMap(t, tableServer.Namespace, "users", "u1\nu2\n")
	eventually(t, reconcileWait, func() error {
		if reader.readsOf(key) == before {
			return fmt.Errorf("the changed ConfigMap was not read")
		}
		return nil
	})
}

// The content of a source that no reconcile reads any more (its resource was deleted, or names
// another) is dropped after forgetAfter; what is read stays.
func TestSourceContentNoResourceReadsIsDropped(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	for _, name := range []string{"old", "live"} {
		s.create(t, configMap(ns, name, map[string]string{"lines": name + "\n"}))
	}
	clock := time.Now()
	c := newSourceCache(s.k8s, s.k8s)
	c.now = func() time.Time { return clock }
	read := func(name string) {
		t.Helper()
		data, found, err := c.data(context.Background(), sourceObject{kind: "ConfigMap", key: client.ObjectKey{Namespace: ns, Name: name}})
		if err != nil || !found || string(data["lines"]) != name+"\n" {
			t.Fatalf("ConfigMap %s: %q, found %v, %v", name, data, found, err)
		}
	}
	read("old")
	read("live")
	clock = clock.Add(forgetAfter)
	read("live")
	clock = clock.Add(forgetAfter/2 + time.Second)
	read("live")
	if _, kept := c.objects[sourceObject{kind: "ConfigMap", key: client.ObjectKey{Namespace: ns, Name: "old"}}]; kept || len(c.objects) != 1 {
		t.Errorf("after %v unread, the cache holds %d objects, old among them: %v", forgetAfter*3/2, len(c.objects), kept)
	}
}
