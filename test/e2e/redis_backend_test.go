//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// testRedisBackend: three table-server pods share a dataset kept in a Redis of the test's
// namespace. Injector pods drain it through the Service while one pod is deleted and then every
// pod is replaced by a rollout; together they get each line at most once, and only a line whose
// request broke in flight may be lost. Then the Redis pod is deleted (it keeps no data): the
// resource says BackendUnavailable, with a Warning event, while the table-server pods keep
// running; once Redis is back they are ready again and no line is handed out a second time.
func testRedisBackend(t *testing.T) {
	ns := newNamespace(t, "redis-backend")
	address := deployRedis(t, ns)

	// 100 READs a second in all: about a minute, through a pod deletion and a rollout.
	const lines, list = 6000, "shared.csv"
	input := testutil.Numbered("shared", lines)
	createConfigMap(t, ns, "shared", list, input)
	tableServer := newServer(ns, "shared", configMapDataset(list, "shared", list))
	tableServer.Spec.Backend = stsv1alpha1.Backend{Type: stsv1alpha1.BackendRedis, Redis: &stsv1alpha1.RedisBackend{
		RedisConnection: stsv1alpha1.RedisConnection{Address: address},
	}}
	tableServer.Spec.Replicas = 3
	create(t, tableServer)
	ledger := newLedger(t, ns)
	tableServer = waitAllAvailable(t, tableServer, 3)
	checkDisruptionBudget(t, tableServer)
	first := readyServerPods(t, ns, tableServer.Name, 3)
	waitListLength(t, tableServer, list, lines)

	injectors := startJob(t, ns, jobSpec{name: "injectors", pods: 4, args: consumeArgs(tableServer, ledger, list, "-workers", "4", "-rate", "25")})

	// (a) A table-server pod is deleted, as a node failure would: the Deployment replaces it.
	waitConsumedAtLeast(t, tableServer, list, lines/10)
	notReady := watchReady(t, tableServer) // the other pods serve meanwhile: Ready stays True
	victim := first[0]
	if err := k8s.Delete(t.Context(), &victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted table-server pod %s while the injectors consume", victim.Name)
	eventually(t, 3*time.Minute, "a Ready replacement of "+victim.Name, func(ctx context.Context) error {
		pods, err := serverPods(ctx, ns, tableServer.Name)
		if err != nil {
			return err
		}
		var ready []string
		for _, p := range pods {
			if p.UID == victim.UID {
				return fmt.Errorf("pod %s is still there (%s)", p.Name, podState(&p))
			}
			if podReady(&p) && p.DeletionTimestamp == nil {
				ready = append(ready, p.Name)
			}
		}
		if len(ready) != 3 {
			return fmt.Errorf("Ready pods %v", ready)
		}
		return nil
	})
	left := logListLength(t, tableServer, list, "after the replacement of the deleted pod")

	// (b) A change of the pod template rolls every pod, one at a time.
	patch := []byte(`{"spec":{"podAnnotations":{"e2e.sts.tableserver.dev/rollout":"1"}}}`)
	if err := k8s.Patch(t.Context(), tableServer, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	t.Logf("rolling the table-server pods with a new pod annotation (%d lines left)", left)
	waitRolledOut(t, tableServer)
	rolled := readyServerPods(t, ns, tableServer.Name, 3)
	for _, p := range rolled {
		if slices.ContainsFunc(first, func(q corev1.Pod) bool { return q.UID == p.UID }) {
			t.Errorf("pod %s of before the rollout still runs after it", p.Name)
		}
		if p.Annotations["e2e.sts.tableserver.dev/rollout"] != "1" {
			t.Errorf("pod %s lacks the new pod annotation: %v", p.Name, p.Annotations)
		}
	}
	if seen := notReady(); len(seen) > 0 {
		t.Errorf("Ready was not True while one pod was replaced and during the rollout, though other pods served: %v", seen)
	}
	if left := logListLength(t, tableServer, list, "at the end of the rollout"); left == 0 {
		t.Log("the injectors drained the list before the rollout ended: the rollout disturbed only part of the run")
	}

	waitJob(t, injectors, 5*time.Minute)
	byPod := consumedByPod(t, injectors, ledger)
	missing := handedOutAcross(t, input, byPod, "the shared list lost lines")
	waitListLength(t, tableServer, list, 0)
	tableServer = waitAllAvailable(t, tableServer, 3)
	t.Logf("all %d lines consumed once (%d lost with requests broken in flight); Ready with 3 pods available", lines-missing, missing)

	// Redis goes away with its data (the example keeps none) and stays away until the resource
	// says so: a replacement Redis pod answers within about two seconds, before the table
	// servers' readiness probes or the operator's next STATUS notice, so the Redis Deployment is
	// scaled to 0 (deleting its pod), and back to 1 afterwards.
	before := readyServerPods(t, ns, tableServer.Name, 3)
	scaleRedis(t, ns, 0)
	deleteRedisPod(t, ns)
	lost := time.Now()
	// The table servers keep running, out of the Service: nothing restarts them.
	eventually(t, time.Minute, "the table-server pods running but not Ready", func(ctx context.Context) error {
		pods, err := serverPods(ctx, ns, tableServer.Name)
		if err != nil {
			return err
		}
		return sameRunningPods(before, pods, false)
	})
	t.Logf("the 3 table-server pods run unready, unrestarted, %v after the Redis pod was deleted", time.Since(lost).Round(time.Second))
	logDirectStatus(t, ns, before[0].Name)
	if unavailable, ok := tryCondition(t, tableServer, 90*time.Second, func(s *stsv1alpha1.SimpleTableServer) error {
		c := meta.FindStatusCondition(s.Status.Conditions, stsv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != stsv1alpha1.ReasonBackendUnavailable {
			return fmt.Errorf("conditions %s", conditionSummary(s))
		}
		return nil
	}); !ok {
		t.Errorf("while Redis is down, the resource does not say BackendUnavailable (the table servers do: see the STATUS above)")
	} else {
		ready := meta.FindStatusCondition(unavailable.Status.Conditions, stsv1alpha1.ConditionReady)
		t.Logf("Ready=False BackendUnavailable %v after the Redis pod was deleted: %s", time.Since(lost).Round(time.Second), ready.Message)
		if !strings.Contains(ready.Message, address) {
			t.Errorf("the BackendUnavailable message does not name the Redis %s: %q", address, ready.Message)
		}
		waitEvent(t, tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonBackendUnavailable)
	}

	scaleRedis(t, ns, 1)
	replacement := waitRedisReady(t, ns)
	back := time.Now()
	t.Logf("Redis pod %s Ready %v after the old one was deleted", replacement, back.Sub(lost).Round(time.Second))
	eventually(t, 2*time.Minute, "the same table-server pods Ready again", func(ctx context.Context) error {
		pods, err := serverPods(ctx, ns, tableServer.Name)
		if err != nil {
			return err
		}
		return sameRunningPods(before, pods, true)
	})
	t.Logf("the table-server pods are Ready again %v after Redis returned", time.Since(back).Round(time.Second))

	// The new Redis is empty: the list is gone, and nothing loads the dataset again behind the
	// user's back, since that would hand out its consumed lines a second time. The resource
	// says so: it serves, but its dataset is not loaded.
	after := waitCondition(t, tableServer, 2*time.Minute, func(s *stsv1alpha1.SimpleTableServer) error {
		ready := meta.FindStatusCondition(s.Status.Conditions, stsv1alpha1.ConditionReady)
		stalled := meta.FindStatusCondition(s.Status.Conditions, stsv1alpha1.ConditionStalled)
		loaded := meta.FindStatusCondition(s.Status.Conditions, stsv1alpha1.ConditionDatasetsLoaded)
		switch {
		case ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != stsv1alpha1.ReasonNotLoaded,
			stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != stsv1alpha1.ReasonNotLoaded,
			loaded == nil || loaded.Status != metav1.ConditionFalse:
			return fmt.Errorf("conditions %s", conditionSummary(s))
		case s.Status.AvailableReplicas != 3:
			return fmt.Errorf("availableReplicas %d", s.Status.AvailableReplicas)
		case slices.ContainsFunc(s.Status.Lists, func(l stsv1alpha1.ListStatus) bool { return l.Name == list }):
			return fmt.Errorf("status.lists %v still shows %s", s.Status.Lists, list)
		}
		return nil
	})
	ready := meta.FindStatusCondition(after.Status.Conditions, stsv1alpha1.ConditionReady)
	t.Logf("%v after Redis returned: Ready=False %s: %s", time.Since(back).Round(time.Second), ready.Reason, ready.Message)
	if !strings.Contains(ready.Message, list) || !strings.Contains(ready.Message, "not in Redis") || !strings.Contains(ready.Message, stsv1alpha1.AnnotationRestartedAt) {
		t.Errorf("the NotLoaded message does not say that %s was lost with Redis' data and how to load it again: %q", list, ready.Message)
	}

	// An injector started now finds nothing to take: no line is handed out a second time.
	late := startJob(t, ns, jobSpec{name: "late-injector", pods: 1, args: consumeArgs(tableServer, ledger, list)})
	waitJob(t, late, 2*time.Minute)
	for pod, c := range consumedByPod(t, late, ledger) {
		t.Logf("late injector %s read %d lines (%d requests refused, %d broken)", pod, c.read, c.refused, c.failed)
		byPod[pod] = c
	}
	handedOut(t, input, byPod)
}

// scaleRedis sets the replicas of the Redis Deployment of ns.
func scaleRedis(t *testing.T, ns string, replicas int32) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	if _, err := clientset.AppsV1().Deployments(ns).Patch(t.Context(), "redis", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling the Redis Deployment to %d: %v", replicas, err)
	}
}

// sameRunningPods says why pods are not the pods before, running without a restart, with
// readiness ready; nil when they are.
func sameRunningPods(before, pods []corev1.Pod, ready bool) error {
	if len(pods) != len(before) {
		return fmt.Errorf("%d pods, want the %d of before", len(pods), len(before))
	}
	var states []string
	wrong := false
	for _, p := range pods {
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		states = append(states, fmt.Sprintf("%s %s ready=%v restarts=%d", p.Name, podState(&p), podReady(&p), restarts))
		switch {
		case !slices.ContainsFunc(before, func(q corev1.Pod) bool { return q.UID == p.UID }):
			return fmt.Errorf("pod %s is new: the pods were replaced (%v)", p.Name, states)
		case restarts > 0:
			return fmt.Errorf("pod %s restarted: %v", p.Name, states)
		case p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || podReady(&p) != ready:
			wrong = true
		}
	}
	if wrong {
		return fmt.Errorf("pods %v", states)
	}
	return nil
}

// waitAllAvailable waits until the resource is Ready for its generation, reconciled, with want
// pods available, and returns it.
func waitAllAvailable(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, want int32) *stsv1alpha1.SimpleTableServer {
	t.Helper()
	return waitCondition(t, tableServer, 3*time.Minute, func(s *stsv1alpha1.SimpleTableServer) error {
		ready := meta.FindStatusCondition(s.Status.Conditions, stsv1alpha1.ConditionReady)
		reconciling := meta.FindStatusCondition(s.Status.Conditions, stsv1alpha1.ConditionReconciling)
		switch {
		case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != s.Generation,
			reconciling == nil || reconciling.Status != metav1.ConditionFalse:
			return fmt.Errorf("conditions %s", conditionSummary(s))
		case s.Status.AvailableReplicas != want || s.Status.Replicas != want:
			return fmt.Errorf("status.replicas %d, availableReplicas %d, want %d", s.Status.Replicas, s.Status.AvailableReplicas, want)
		}
		return nil
	})
}

// watchReady reads the resource's Ready condition every half second until the returned stop is
// called, which returns each condition other than True that it saw (the same one once).
func watchReady(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer) (stop func() []string) {
	ctx, cancel := context.WithCancel(t.Context())
	var seen []string
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		last := ""
		for ctx.Err() == nil {
			got := &stsv1alpha1.SimpleTableServer{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), got); err == nil {
				c := meta.FindStatusCondition(got.Status.Conditions, stsv1alpha1.ConditionReady)
				now := "no Ready condition"
				if c != nil {
					now = fmt.Sprintf("Ready=%s (%s: %s)", c.Status, c.Reason, c.Message)
				}
				if c != nil && c.Status == metav1.ConditionTrue {
					now = ""
				} else if now != last {
					seen = append(seen, fmt.Sprintf("at %v: %s", time.Since(start).Round(100*time.Millisecond), now))
				}
				last = now
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		cancel()
		<-done
		return seen
	}
}

// tryCondition is waitCondition that does not stop the test: it reports whether check accepted
// the resource within timeout, and returns the resource, or why check refused it last.
func tryCondition(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, timeout time.Duration, check func(*stsv1alpha1.SimpleTableServer) error) (*stsv1alpha1.SimpleTableServer, bool) {
	t.Helper()
	got := &stsv1alpha1.SimpleTableServer{}
	var last error
	for deadline := time.Now().Add(timeout); ; {
		if last = k8s.Get(t.Context(), client.ObjectKeyFromObject(tableServer), got); last == nil {
			if last = check(got); last == nil {
				return got, true
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("after %v: SimpleTableServer %s: %v", timeout, tableServer.Name, last)
			return got, false
		}
		select {
		case <-t.Context().Done():
			return got, false
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// logDirectStatus logs how a table-server pod, asked directly through the API server's proxy,
// answers STATUS and how long it takes: what the operator learns when the Service has no ready
// pod.
func logDirectStatus(t *testing.T, ns, pod string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	start := time.Now()
	body, err := clientset.CoreV1().Pods(ns).ProxyGet("http", pod, "9191", "sts/STATUS", map[string]string{"FORMAT": "JSON"}).DoRaw(ctx)
	t.Logf("STATUS asked of pod %s directly: answered in %v: %.300s (%v)", pod, time.Since(start).Round(100*time.Millisecond), body, err)
}

// waitCondition waits until check accepts the resource as it is, and returns it.
func waitCondition(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, timeout time.Duration, check func(*stsv1alpha1.SimpleTableServer) error) *stsv1alpha1.SimpleTableServer {
	t.Helper()
	got := &stsv1alpha1.SimpleTableServer{}
	eventually(t, timeout, "SimpleTableServer "+tableServer.Name, func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), got); err != nil {
			return err
		}
		return check(got)
	})
	return got
}

// checkDisruptionBudget checks that the budget of a resource with several replicas lets one of
// its pods be evicted at a time.
func checkDisruptionBudget(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer) {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{}
	eventually(t, time.Minute, "the PodDisruptionBudget of "+tableServer.Name, func(ctx context.Context) error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), pdb)
	})
	if got := pdb.Spec.MaxUnavailable; got == nil || got.String() != "1" || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget %s: maxUnavailable %v, minAvailable %v; want maxUnavailable 1", pdb.Name, got, pdb.Spec.MinAvailable)
	}
	want := map[string]string{"app.kubernetes.io/name": "simpletableserver", "app.kubernetes.io/instance": tableServer.Name}
	if sel := pdb.Spec.Selector; sel == nil || fmt.Sprint(sel.MatchLabels) != fmt.Sprint(want) {
		t.Errorf("PodDisruptionBudget %s selects %v, want %v", pdb.Name, sel, want)
	}
}

// serverPods lists the table-server pods of a resource.
func serverPods(ctx context.Context, ns, name string) ([]corev1.Pod, error) {
	pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=simpletableserver,app.kubernetes.io/instance=" + name})
	if err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// readyServerPods waits until the resource has exactly want table-server pods, all Ready and
// none being deleted, and returns them.
func readyServerPods(t *testing.T, ns, name string, want int) []corev1.Pod {
	t.Helper()
	var ready []corev1.Pod
	eventually(t, 3*time.Minute, fmt.Sprintf("%d Ready table-server pods of %s", want, name), func(ctx context.Context) error {
		pods, err := serverPods(ctx, ns, name)
		if err != nil {
			return err
		}
		ready = ready[:0]
		var states []string
		for _, p := range pods {
			states = append(states, p.Name+" "+podState(&p))
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready = append(ready, p)
			}
		}
		if len(ready) != want || len(pods) != want {
			return fmt.Errorf("pods %v", states)
		}
		return nil
	})
	return ready
}

// waitConsumedAtLeast waits until the server reports at least n lines taken from list.
func waitConsumedAtLeast(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, list string, n int) {
	t.Helper()
	total := -1
	eventually(t, 3*time.Minute, fmt.Sprintf("%d lines of %s consumed", n, list), func(ctx context.Context) error {
		left, err := serverLength(ctx, tableServer.Namespace, tableServer.Name, list)
		if err != nil {
			return err
		}
		if total < 0 {
			total = left
		}
		if total-left < n {
			return fmt.Errorf("%d lines left", left)
		}
		return nil
	})
}

// logListLength logs how many lines list has left, and returns it (-1 when the server did not say).
func logListLength(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, list, when string) int {
	t.Helper()
	left, err := serverLength(t.Context(), tableServer.Namespace, tableServer.Name, list)
	if err != nil {
		t.Logf("%s: the length of %s: %v", when, list, err)
		return -1
	}
	t.Logf("%s: %d lines of %s left", when, left, list)
	return left
}

// waitRolledOut waits until the resource's Deployment runs only pods of its current template,
// all available.
func waitRolledOut(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer) {
	t.Helper()
	d := &appsv1.Deployment{}
	eventually(t, 4*time.Minute, "the rollout of "+tableServer.Name, func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), d); err != nil {
			return err
		}
		want := ptr.Deref(d.Spec.Replicas, 1)
		s := d.Status
		if d.Spec.Template.Annotations["e2e.sts.tableserver.dev/rollout"] != "1" || s.ObservedGeneration < d.Generation ||
			s.UpdatedReplicas != want || s.Replicas != want || s.AvailableReplicas != want {
			return fmt.Errorf("generation %d observed %d: replicas %d, updated %d, available %d of %d",
				d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want)
		}
		return nil
	})
}

// waitEvent waits for an event of the given type and reason about the resource.
func waitEvent(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, eventType, reason string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("a %s event %s about %s", eventType, reason, tableServer.Name), func(ctx context.Context) error {
		events, err := clientset.EventsV1().Events(tableServer.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Kind != "SimpleTableServer" || e.Regarding.Name != tableServer.Name {
				continue
			}
			if e.Type == eventType && e.Reason == reason {
				t.Logf("event %s %s: %s", e.Type, e.Reason, e.Note)
				return nil
			}
			seen = append(seen, e.Type+" "+e.Reason)
		}
		return fmt.Errorf("events %v", seen)
	})
}
