package controller

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// BenchmarkScale creates 200 SimpleTableServers at once, all served by one real table server,
// and measures how long the operator takes until every one is Ready, against the time one
// resource takes in the same run (x-baseline). Then it watches three refresh intervals of
// steady state, in which the operator must cause no API writes (no request through its
// client, no changed resourceVersion, no event) and poll each server once per interval.
//
//	go test -run '^$' -bench Scale -benchtime 1x ./internal/controller   (with KUBEBUILDER_ASSETS set)
func BenchmarkScale(b *testing.B) {
	s := requireEnvtest(b)
	const (
		count    = 200
		interval = 2 * time.Second
	)
	ts := startTableServer(b, "", map[string][]string{"users": {"u1", "u2", "u3"}})
	s.createReady(b, 1, interval, ts) // warm-up: the first one waits for the manager to start
	_, baseline, _ := s.createReady(b, 1, interval, ts)
	b.ResetTimer()
	for range b.N {
		ns, elapsed, writes := s.createReady(b, count, interval, ts)
		b.StopTimer()
		before := s.snapshot(b, ns)
		writesBefore, polls := s.writes.in(ns), ts.statuses.Load()
		time.Sleep(3 * interval)
		after := s.snapshot(b, ns)
		steadyWrites := s.writes.in(ns) - writesBefore
		if steadyWrites != 0 || !reflect.DeepEqual(before, after) {
			b.Errorf("steady state: %d writes through the client; objects changed: %v", steadyWrites, diff(before, after))
		}
		pollRate := float64(ts.statuses.Load()-polls) / (3 * interval).Seconds()
		if want := float64(count) / interval.Seconds(); pollRate > 1.5*want {
			b.Errorf("%.0f STATUS polls/s, want about %.0f: one per resource per refresh interval", pollRate, want)
		}
		b.ReportMetric(elapsed.Seconds(), "s-to-ready")
		b.ReportMetric(float64(elapsed)/float64(baseline), "x-baseline")
		b.ReportMetric(float64(writes)/count, "writes/resource")
		b.ReportMetric(float64(steadyWrites), "steady-writes")
		b.ReportMetric(pollRate, "polls/s")
		b.StartTimer()
	}
}

// createReady creates count resources in a new namespace, served by ts, concurrently, and
// waits until all are Ready at their generation. It returns the namespace, the time taken and
// the API writes the operator made meanwhile.
func (s *envtestSuite) createReady(b *testing.B, count int, interval time.Duration, ts *testTableServer) (string, time.Duration, int) {
	b.Helper()
	ns := s.newNamespace(b)
	s.endpoints.set(b, ns, ts.url)
	s.rollouts.in(b, ns)
	s.create(b, configMap(ns, "users", map[string]string{"lines": "u1\nu2\nu3\n"}))
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, count)
	for i := range count {
		wg.Go(func() {
			tableServer := specstest.New(fmt.Sprintf("tables-%03d", i), specstest.InNamespace(ns), specstest.WithRefresh(interval), specstest.WithConfigMapDataset("users", "users", "lines"))
			tableServer.UID = ""
			if err := s.k8s.Create(context.Background(), tableServer); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("create: %v", err)
	}
	eventually(b, 2*time.Minute, func() error {
		var list stsv1alpha1.SimpleTableServerList
		if err := s.k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		ready := 0
		for _, tableServer := range list.Items {
			c := meta.FindStatusCondition(tableServer.Status.Conditions, stsv1alpha1.ConditionReady)
			if c != nil && c.Status == metav1.ConditionTrue && tableServer.Status.ObservedGeneration == tableServer.Generation && tableServer.Status.TotalLines == 3 {
				ready++
			}
		}
		if ready < count {
			return fmt.Errorf("%d of %d resources ready", ready, count)
		}
		return nil
	})
	return ns, time.Since(start), s.writes.in(ns)
}

// snapshot maps every SimpleTableServer, Deployment and Service in ns to its resourceVersion,
// and counts the events.
func (s *envtestSuite) snapshot(b *testing.B, ns string) map[string]string {
	b.Helper()
	versions := map[string]string{}
	lists := map[string]client.ObjectList{
		"SimpleTableServer": &stsv1alpha1.SimpleTableServerList{},
		"Deployment":        &appsv1.DeploymentList{},
		"Service":           &corev1.ServiceList{},
		"Event":             &eventsv1.EventList{},
	}
	for kind, list := range lists {
		if err := s.k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if err := meta.EachListItem(list, func(obj runtime.Object) error {
			o := obj.(client.Object)
			versions[kind+"/"+o.GetName()] = o.GetResourceVersion()
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	return versions
}

func diff(before, after map[string]string) []string {
	var d []string
	for k, v := range after {
		if before[k] != v {
			d = append(d, fmt.Sprintf("%s %q -> %q", k, before[k], v))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, k+" gone")
		}
	}
	return d
}
