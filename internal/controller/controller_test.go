package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
	stsserver "github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// reconcileWait bounds how long a test waits for the manager to act on a change.
const reconcileWait = 15 * time.Second

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func TestCreateMakesTheDeploymentServiceAndClaim(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	s.create(t, configMap(ns, "logins", map[string]string{"users": "u1\nu2\n"}))
	s.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payment"}, Data: map[string][]byte{"cards": []byte("c1\n")}})
	tableServer := specstest.New("logins", specstest.InNamespace(ns),
		specstest.WithConfigMapDataset("users.csv", "logins", "users"),
		specstest.WithSecretDataset("cards.csv", "payment", "cards"),
		specstest.WithClaimDataset("big.csv", "archive", "perf/big.csv", ""),
		specstest.WithStorageSize("2Gi", nil))
	tableServer.UID = ""
	s.create(t, tableServer)

	var d appsv1.Deployment
	var svc corev1.Service
	var pvc corev1.PersistentVolumeClaim
	eventually(t, reconcileWait, func() error {
		for _, obj := range []client.Object{&d, &svc, &pvc} {
			name := "logins"
			if obj == &pvc {
				name = "logins-data"
			}
			if err := s.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
				return err
			}
		}
		return nil
	})
	s.get(t, tableServer)
	for _, obj := range []client.Object{&d, &svc, &pvc} {
		specstest.AssertOwnedBy(t, obj.GetOwnerReferences(), tableServer)
	}
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("Deployment: replicas %d, strategy %s", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	var lists []string
	for _, f := range specstest.LoadFlags(&d) {
		lists = append(lists, f.List)
	}
	if want := []string{"users.csv", "cards.csv", "big.csv"}; !reflect.DeepEqual(lists, want) {
		t.Errorf("the pod loads %q, want every dataset %q", lists, want)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != specstest.Image || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("container image %q, read-only root %v", c.Image, *c.SecurityContext.ReadOnlyRootFilesystem)
	}
	if !slices.Contains(c.Args, "--state-dir=/data/state") || !slices.Contains(c.Args, "--fsync-policy=always") {
		t.Errorf("a server with storage does not journal to it: %q", c.Args)
	}
	if p := svc.Spec.Ports; len(p) != 1 || p[0].Port != 9191 || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("Service %s ports %+v", svc.Spec.Type, p)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("claim requests %s", got.String())
	}
	for _, want := range []string{"Deployment logins", "Service logins", "PersistentVolumeClaim logins-data"} {
		eventually(t, 10*time.Second, func() error { return s.findEventNote(tableServer, corev1.EventTypeNormal, "Created", want) })
	}
	// No Deployment controller has reported on the pod yet.
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReconciling, metav1.ConditionTrue, stsv1alpha1.ReasonRollingOut, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != stsv1alpha1.ReasonRollingOut {
		t.Errorf("Ready = %+v", c)
	}
	if cur.Status.Endpoint != "http://logins."+ns+".svc:9191" || cur.Status.Image != specstest.Image {
		t.Errorf("endpoint %q image %q", cur.Status.Endpoint, cur.Status.Image)
	}
	if cur.Spec.DatasetUpdatePolicy != stsv1alpha1.DatasetUpdateKeep || cur.Spec.StatusRefreshInterval.Duration != 10*time.Second ||
		!*cur.Spec.Server.AddTimestamp || *cur.Spec.Server.AllowStop || cur.Spec.Server.Charsets.Read != "UTF-8" {
		t.Errorf("defaults not applied: %+v", cur.Spec)
	}
}

// findEventNote returns nil when an event about tableServer with the reason has a note containing part.
func (s *envtestSuite) findEventNote(tableServer *stsv1alpha1.SimpleTableServer, eventType, reason, part string) error {
	note := ""
	var events []string
	err := s.forEachEvent(tableServer, func(typ, r, n string) {
		events = append(events, r+": "+n)
		if typ == eventType && r == reason && strings.Contains(n, part) {
			note = n
		}
	})
	if err != nil {
		return err
	}
	if note == "" {
		return fmt.Errorf("no %s event %s mentioning %q; events: %q", eventType, reason, part, events)
	}
	return nil
}

func TestMissingConfigMapIsReportedAndHealsWhenCreated(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	tableServer := specstest.New("logins", specstest.InNamespace(ns), specstest.WithConfigMapDataset("users", "logins", "users"))
	tableServer.UID = ""
	s.create(t, tableServer)

	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonSourceMissing, reconcileWait)
	for _, typ := range []string{stsv1alpha1.ConditionReady, stsv1alpha1.ConditionDatasetsLoaded, stsv1alpha1.ConditionDatasetsInSync} {
		if c := meta.FindStatusCondition(cur.Status.Conditions, typ); c.Status != metav1.ConditionFalse || c.Reason != stsv1alpha1.ReasonSourceMissing {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonSourceMissing, `ConfigMap "logins" (dataset "users")`)
	})
	var d appsv1.Deployment
	if err := s.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "logins"}, &d); !apierrors.IsNotFound(err) {
		t.Fatalf("a Deployment exists while its ConfigMap is missing (err %v): its pod could not start", err)
	}

	// The ConfigMap appears without the key: still missing, now the key.
	cm := configMap(ns, "logins", map[string]string{"other": "x"})
	s.create(t, cm)
	eventually(t, reconcileWait, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonSourceMissing, `key "users" of ConfigMap "logins"`)
	})

	cm.Data["users"] = "u1\nu2\n"
	if err := s.k8s.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, reconcileWait, func() error {
		return s.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "logins"}, &d)
	})
	cur = s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReconciling, metav1.ConditionTrue, stsv1alpha1.ReasonRollingOut, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionStalled); c.Status != metav1.ConditionFalse {
		t.Errorf("still stalled after healing: %+v", c)
	}
}

// servedTableServer creates a resource whose datasets are ConfigMaps, a table server holding the
// lists as the pod would have loaded them, and waits until the resource reports it Ready.
func (s *envtestSuite) servedTableServer(t *testing.T, token string, datasets map[string]string, opts ...specstest.Option) (*stsv1alpha1.SimpleTableServer, *testTableServer) {
	t.Helper()
	ns := s.newNamespace(t)
	lists := map[string][]string{}
	opts = append([]specstest.Option{specstest.InNamespace(ns), specstest.WithRefresh(time.Second)}, opts...)
	for name, content := range datasets {
		s.create(t, configMap(ns, name, map[string]string{"lines": content}))
		lists[name] = splitLines(content)
		opts = append(opts, specstest.WithConfigMapDataset(name, name, "lines"))
	}
	if token != "" {
		s.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"}, Data: map[string][]byte{"token": []byte(token)}})
		opts = append(opts, specstest.WithAuthToken("token", "token"))
	}
	ts := startTableServer(t, token, lists, loadsFrom(t, datasets))
	tableServer := specstest.New("tables", opts...)
	tableServer.UID = ""
	s.endpoints.set(t, ns+"/tables", ts.url)
	s.rollouts.in(t, ns)
	s.create(t, tableServer)
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsLoaded, metav1.ConditionTrue, stsv1alpha1.ReasonLoaded, reconcileWait)
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionTrue, stsv1alpha1.ReasonInSync, reconcileWait)
	return tableServer, ts
}

// loadsFrom writes each dataset's content into a file and names it as the server's startup
// source of the dataset's list (--load), as the pod's mounted ConfigMap is: what RELOAD reads.
// The server keeps the lists it already holds at startup.
func loadsFrom(t *testing.T, datasets map[string]string) func(*stsserver.Config) {
	dir := t.TempDir()
	var loads []stsserver.Load
	for name, content := range datasets {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		loads = append(loads, stsserver.Load{List: name, Path: path})
	}
	return func(c *stsserver.Config) { c.Loads = loads }
}

// splitLines splits the test's dataset text into lines (one per "\n", no trailing empty line).
func splitLines(content string) []string {
	return strings.Split(strings.TrimSuffix(content, "\n"), "\n")
}

func (s *envtestSuite) updateConfigMap(t *testing.T, ns, name, content string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s.get(t, cm)
	cm.Data["lines"] = content
	if err := s.k8s.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

func TestChangedConfigMapWithKeepPolicyReportsDriftOnly(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\nu3\n"})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, d)

	s.updateConfigMap(t, tableServer.Namespace, "users", "new1\nnew2\n")
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionFalse, stsv1alpha1.ReasonSourceChanged, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionDatasetsInSync); !strings.Contains(c.Message, `"users"`) {
		t.Errorf("the drift message does not name the dataset: %q", c.Message)
	}
	// Drift is not a fault: the resource stays Ready, and healthy to kstatus.
	for typ, want := range map[string]metav1.ConditionStatus{
		stsv1alpha1.ConditionReady: metav1.ConditionTrue, stsv1alpha1.ConditionReconciling: metav1.ConditionFalse,
		stsv1alpha1.ConditionStalled: metav1.ConditionFalse, stsv1alpha1.ConditionDatasetsLoaded: metav1.ConditionTrue,
	} {
		if c := meta.FindStatusCondition(cur.Status.Conditions, typ); c.Status != want {
			t.Errorf("%s = %+v under drift, want %s", typ, c, want)
		}
	}
	if res := computeKstatus(t, cur); res.Status != kstatus.CurrentStatus {
		t.Errorf("kstatus = %s (%s) under drift, want Current", res.Status, res.Message)
	}
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeNormal, stsv1alpha1.ReasonSourceChanged, `"users"`)
	})
	after := d.DeepCopy()
	s.get(t, after)
	if after.ResourceVersion != d.ResourceVersion {
		t.Errorf("the Deployment was written (resourceVersion %s -> %s): Keep must not touch the pod", d.ResourceVersion, after.ResourceVersion)
	}
	if n := ts.length("users"); n != 3 || ts.loads.Load() != 0 {
		t.Errorf("the running list changed: length %d after %d LOAD calls", n, ts.loads.Load())
	}
}

func TestChangedConfigMapWithReloadPolicyReplacesOnlyThatList(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "s3cret", map[string]string{"users": "u1\nu2\nu3\n", "cards": "c1\nc2\n"},
		specstest.WithPolicy(stsv1alpha1.DatasetUpdateReload))
	ts.call(t, "/sts/ADD?FILENAME=cards&LINE=c3&ADD_MODE=LAST&TOKEN=s3cret") // a client's change the reload must keep
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, d)
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
	notReady := s.watchCondition(t, tableServer, stsv1alpha1.ConditionReady)

	s.updateConfigMap(t, tableServer.Namespace, "users", "n1\nn2\nn3\nn4\nn5\n")
	eventually(t, reconcileWait, func() error {
		if n := ts.length("users"); n != 5 {
			return fmt.Errorf("users has %d lines, want the 5 of the new ConfigMap", n)
		}
		return nil
	})
	if lines, _ := ts.store.Lines(context.Background(), "users"); !reflect.DeepEqual(lines, []string{"n1", "n2", "n3", "n4", "n5"}) {
		t.Errorf("users = %q", lines)
	}
	if lines, _ := ts.store.Lines(context.Background(), "cards"); !reflect.DeepEqual(lines, []string{"c1", "c2", "c3"}) {
		t.Errorf("cards, whose source did not change, = %q", lines)
	}
	eventually(t, 10*time.Second, func() error { return s.findEventNote(tableServer, corev1.EventTypeNormal, "Reloaded", `"users"`) })
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionTrue, stsv1alpha1.ReasonInSync, reconcileWait)
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
	eventually(t, reconcileWait, func() error {
		s.get(t, cur)
		if got := listLength(cur, "users"); got != 5 {
			return fmt.Errorf("status.lists says users has %d lines", got)
		}
		return nil
	})

	// Each change is pushed once, and the pod is left alone.
	ts.waitPolls(t, 3)
	if n := ts.loads.Load(); n != 1 {
		t.Errorf("%d LOAD calls for one change", n)
	}
	// The loaded-datasets record is a Deployment annotation, which bumps the generation; only
	// a new pod template would replace the pod.
	after := s.requirePodKept(t, d, "a reload")
	// Nor is the resource ever reported not Ready on the way.
	if seen := notReady(); seen != "" {
		t.Errorf("Ready was not True during the reload: %s", seen)
	}

	// A new spec, and so a new pod, ends the record of reloads.
	if _, ok := after.Annotations[reloadedAtGenerationAnnotation]; !ok {
		t.Errorf("the reload is not recorded: %v", after.Annotations)
	}
	s.update(t, cur, func(cur *stsv1alpha1.SimpleTableServer) { cur.Spec.PodAnnotations = map[string]string{"team": "perf"} })
	eventually(t, reconcileWait, func() error {
		s.get(t, after)
		if at, ok := after.Annotations[reloadedAtGenerationAnnotation]; ok {
			return fmt.Errorf("the new spec's Deployment still says reloaded at generation %s", at)
		}
		return nil
	})
}

// watchCondition reads tableServer every 10ms until the returned function is called, which returns the
// first condition of type typ seen that was not True ("" when none was).
func (s *envtestSuite) watchCondition(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, typ string) func() string {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	seen := make(chan string, 1)
	go func() {
		defer close(seen)
		cur := tableServer.DeepCopy()
		for ctx.Err() == nil {
			if err := s.k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), cur); err == nil {
				if c := meta.FindStatusCondition(cur.Status.Conditions, typ); c != nil && c.Status != metav1.ConditionTrue {
					seen <- fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() string {
		stop()
		return <-seen
	}
}

func listLength(tableServer *stsv1alpha1.SimpleTableServer, name string) int64 {
	for _, l := range tableServer.Status.Lists {
		if l.Name == name {
			return l.Length
		}
	}
	return -1
}

func TestStatusFollowsTheServerAndTheGeneration(t *testing.T) {
	s := requireEnvtest(t)
	const interval = time.Second
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\nu3\nu4\nu5\n"})
	cur := tableServer.DeepCopy()
	eventually(t, reconcileWait, func() error {
		s.get(t, cur)
		if listLength(cur, "users") != 5 || cur.Status.TotalLines != 5 || cur.Status.ListCount != 1 || cur.Status.LastStatusTime == nil {
			return fmt.Errorf("status %+v", cur.Status)
		}
		return nil
	})

	for range 2 {
		if body := ts.call(t, "/sts/READ?FILENAME=users&READ_MODE=FIRST&KEEP=FALSE"); !strings.Contains(body, "<body>u") {
			t.Fatalf("READ answered %q", body)
		}
	}
	read := time.Now()
	// Within one refresh interval, plus the time one reconcile and one watch event take.
	eventually(t, interval+2*time.Second, func() error {
		s.get(t, cur)
		if listLength(cur, "users") != 3 || cur.Status.TotalLines != 3 {
			return fmt.Errorf("status.lists %+v total %d", cur.Status.Lists, cur.Status.TotalLines)
		}
		return nil
	})
	t.Logf("status followed two READ KEEP=FALSE calls after %v (refresh interval %v)", time.Since(read).Round(10*time.Millisecond), interval)

	// kstatus: a new generation is not Current until observedGeneration and Ready's
	// observedGeneration catch up with it, and Ready is True.
	s.update(t, cur, func(cur *stsv1alpha1.SimpleTableServer) { cur.Spec.PodAnnotations = map[string]string{"team": "perf"} })
	cur = s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
	if cur.Generation != 2 || cur.Status.ObservedGeneration != 2 {
		t.Errorf("generation %d, observedGeneration %d", cur.Generation, cur.Status.ObservedGeneration)
	}
}

func TestUnreachableServerIsAConditionNotAHotLoop(t *testing.T) {
	s := requireEnvtest(t)
	// servedTableServer has the pod available, so silence means trouble.
	tableServer, _ := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	// The pod's address now answers like a broken proxy.
	var attempts atomic.Int64
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		http.Error(w, "<html>Bad Gateway</html>", http.StatusBadGateway)
	}))
	t.Cleanup(broken.Close)
	s.endpoints.set(t, tableServer.Namespace+"/"+tableServer.Name, broken.URL)

	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionFalse, stsv1alpha1.ReasonUnreachable, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionReconciling); c.Status != metav1.ConditionTrue || c.Reason != stsv1alpha1.ReasonUnreachable {
		t.Errorf("Reconciling = %+v", c)
	}
	if listLength(cur, "users") != 1 {
		t.Errorf("the last reading was dropped: %+v", cur.Status.Lists)
	}
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonUnreachable, "HTTP 502")
	})

	// While it stays so: one attempt per refresh interval (1s), and nothing written. Three
	// attempts cannot come in less than two intervals; a loaded machine only spaces them more.
	before, tries, start := s.writes.in(tableServer.Namespace), attempts.Load(), time.Now()
	s.get(t, cur)
	testutil.Until(t, 3*reconcileWait, 10*time.Millisecond, "three more attempts", func() bool { return attempts.Load() >= tries+3 })
	took := time.Since(start)
	after := cur.DeepCopy()
	s.get(t, after)
	if w := s.writes.in(tableServer.Namespace) - before; w != 0 || after.ResourceVersion != cur.ResourceVersion {
		t.Errorf("%d writes while nothing changed (resourceVersion %s -> %s)", w, cur.ResourceVersion, after.ResourceVersion)
	}
	if took < 2*time.Second {
		t.Errorf("3 STATUS attempts in %v at a 1s interval", took)
	}
}

func TestSecondReconcileWritesNothing(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\n"}, specstest.WithStorageSize("1Gi", nil))
	eventually(t, reconcileWait, func() error {
		cur := tableServer.DeepCopy()
		s.get(t, cur)
		if listLength(cur, "users") != 2 {
			return fmt.Errorf("status.lists %+v", cur.Status.Lists)
		}
		return nil
	})
	objects := func() []client.Object {
		return []client.Object{
			&stsv1alpha1.SimpleTableServer{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name + "-data"}},
		}
	}
	versions := func() []string {
		var v []string
		for _, obj := range objects() {
			s.get(t, obj)
			v = append(v, obj.GetResourceVersion())
		}
		return v
	}
	// The direct reconciles below read the manager's cache: wait until it has the operator's own
	// last writes, or a slow machine would see them write what the cache does not show yet.
	var before []string
	eventually(t, reconcileWait, func() error {
		before = versions()
		for i, obj := range objects() {
			if err := s.reconciler.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			if obj.GetResourceVersion() != before[i] {
				return fmt.Errorf("the cache has %T at resourceVersion %s, the API server %s", obj, obj.GetResourceVersion(), before[i])
			}
		}
		return nil
	})
	writes := s.writes.in(tableServer.Namespace)
	for range 2 {
		res, err := s.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tableServer)})
		if err != nil || res.RequeueAfter != time.Second {
			t.Fatalf("Reconcile = %+v, %v", res, err)
		}
	}
	ts.waitPolls(t, 2) // and two polls by the manager
	if after := versions(); !reflect.DeepEqual(before, after) {
		t.Errorf("resourceVersions changed from %v to %v", before, after)
	}
	if w := s.writes.in(tableServer.Namespace) - writes; w != 0 {
		t.Errorf("%d API writes by unchanged reconciles", w)
	}
}

// A server that restarted and loaded an older version of a dataset than the one the operator
// pushed last (the kubelet had not refreshed the mounted file yet) says so in its STATUS: under
// Reload the operator pushes the current content again, where its own record would call the
// list loaded.
func TestReloadRepairsAServerThatLoadedAnOlderVersion(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\nu3\n"}, specstest.WithPolicy(stsv1alpha1.DatasetUpdateReload))
	s.updateConfigMap(t, tableServer.Namespace, "users", "n1\nn2\n")
	eventually(t, reconcileWait, func() error {
		if lines, _ := ts.store.Lines(context.Background(), "users"); !reflect.DeepEqual(lines, []string{"n1", "n2"}) {
			return fmt.Errorf("users = %q", lines)
		}
		return nil
	})
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionTrue, stsv1alpha1.ReasonInSync, reconcileWait)

	// The restarted server's startup load, of the old file: its digest is reported as a
	// startup load's is.
	ts.loadDataset(t, "users", "u1\nu2\nu3\n")
	eventually(t, reconcileWait, func() error {
		if lines, _ := ts.store.Lines(context.Background(), "users"); !reflect.DeepEqual(lines, []string{"n1", "n2"}) {
			return fmt.Errorf("users = %q, want the ConfigMap's content pushed again", lines)
		}
		return nil
	})
	if n := ts.loads.Load(); n != 3 { // the reload, the restart's load, the repair
		t.Errorf("%d LOAD calls, want 3", n)
	}
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionTrue, stsv1alpha1.ReasonInSync, reconcileWait)
}

// A rotated auth token restarts nothing: the pod template stays, and while the server still has
// the old token (the kubelet refreshes a mounted Secret a minute or two late) the operator goes
// on reading its STATUS with the old one; once the server has the new token, with the new one.
func TestRotatedAuthTokenKeepsThePodAndTheStatus(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "s3cret", map[string]string{"users": "u1\nu2\nu3\n"})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, d)
	notReady := s.watchCondition(t, tableServer, stsv1alpha1.ConditionReady)
	followsLength := func(want int64) {
		t.Helper()
		eventually(t, reconcileWait, func() error {
			cur := tableServer.DeepCopy()
			s.get(t, cur)
			if got := listLength(cur, "users"); got != want {
				return fmt.Errorf("status.lists says users has %d lines, want %d", got, want)
			}
			return nil
		})
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: "token"}}
	s.get(t, secret)
	secret.Data["token"] = []byte("n3w\n") // a file's trailing newline, as kubectl create --from-file leaves it
	if err := s.k8s.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE&TOKEN=s3cret") // the server has the old token still
	followsLength(2)
	if err := ts.srv.SetAuthToken("n3w"); err != nil { // the kubelet's copy arrives
		t.Fatal(err)
	}
	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE&TOKEN=n3w")
	followsLength(1)

	s.requirePodKept(t, d, "a new token")
	if seen := notReady(); seen != "" {
		t.Errorf("Ready was not True during the rotation: %s", seen)
	}
}

// requirePodKept fails t if the pod template of d, as read before cause, has changed since:
// the table server would restart. It returns the Deployment as it is now.
func (s *envtestSuite) requirePodKept(t *testing.T, d *appsv1.Deployment, cause string) *appsv1.Deployment {
	t.Helper()
	after := d.DeepCopy()
	s.get(t, after)
	if !apiequality.Semantic.DeepEqual(after.Spec.Template, d.Spec.Template) {
		t.Errorf("the pod template changed with %s: the server would restart\n%+v\n%+v", cause, d.Spec.Template, after.Spec.Template)
	}
	return after
}

// The record of what a server loaded follows what the server says it loaded: after a restart
// that loaded a newer mounted file under Keep, the record is corrected, so that when a later
// restart restores the lists from a journal (no digest then), the operator does not push the
// dataset again under Reload, which would hand out the lines consumed in between again.
func TestRecordFollowsWhatTheServerLoaded(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\nu3\n"})
	s.updateConfigMap(t, tableServer.Namespace, "users", "n1\nn2\nn3\n")
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionFalse, stsv1alpha1.ReasonSourceChanged, reconcileWait)
	ts.loadDataset(t, "users", "n1\nn2\nn3\n") // a restart that loaded the refreshed mounted file
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionTrue, stsv1alpha1.ReasonInSync, reconcileWait)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	eventually(t, reconcileWait, func() error {
		s.get(t, d)
		if got, want := loadedHashes(d)["users"], specs.Hash([]byte("n1\nn2\nn3\n")); got != want {
			return fmt.Errorf("the record says users is %s, the server holds %s", got, want)
		}
		return nil
	})

	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE") // a client consumes n1
	s.update(t, cur, func(cur *stsv1alpha1.SimpleTableServer) {
		cur.Spec.DatasetUpdatePolicy = stsv1alpha1.DatasetUpdateReload
	})
	// A durable restart: the same lines, restored, with no digest.
	resp, err := http.Post(ts.url+"/sts/LOAD?FILENAME=users", "text/plain", strings.NewReader("n2\nn3\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loads := ts.loads.Load()
	ts.waitPolls(t, 3)
	if lines, _ := ts.store.Lines(context.Background(), "users"); !reflect.DeepEqual(lines, []string{"n2", "n3"}) {
		t.Errorf("users = %q: the dataset was pushed again, its consumed line back", lines)
	}
	if n := ts.loads.Load(); n != loads {
		t.Errorf("%d LOAD calls after the restart", n-loads)
	}
}

// A token Secret emptied is a problem the user must fix, not a token the operator drops: the
// server would refuse to start on it, so the resource stalls and its pod is left as it is.
func TestEmptiedTokenStalls(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, _ := s.servedTableServer(t, "s3cret", map[string]string{"users": "u1\n"})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, d)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: "token"}}
	s.get(t, secret)
	secret.Data["token"] = []byte(" \n")
	if err := s.k8s.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonSourceMissing, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionStalled); !strings.Contains(c.Message, "which is empty") {
		t.Errorf("Stalled says %q, not that the token is empty", c.Message)
	}
	s.requirePodKept(t, d, "an emptied token")
}

// deploymentPatchesRefused refuses every Deployment patch, as a policy engine could.
type deploymentPatchesRefused struct{ client.Client }

func (c deploymentPatchesRefused) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*appsv1.Deployment); ok {
		return errors.New("denied by policy")
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// A record of what the server loaded that cannot be written is retried at the next poll; it is
// no failed reload (under Keep nothing is reloaded at all), so it must not be reported as one.
func TestRecordFailureIsNoReloadFailure(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	before := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, before)
	ts.loadDataset(t, "users", "n1\n") // the server now says it holds content the record does not

	refusing := *s.reconciler
	stale := staleDeployment{Client: s.reconciler.Client, d: before}
	refusing.Client, refusing.APIReader = deploymentPatchesRefused{stale}, stale
	cur := tableServer.DeepCopy()
	s.get(t, cur)
	src, err := refusing.resolveSources(context.Background(), cur)
	if err != nil {
		t.Fatal(err)
	}
	if obs := refusing.observeServer(context.Background(), cur, before.DeepCopy(), src); obs.err != nil || obs.reloadErr != nil {
		t.Errorf("observation: server %v, reload %v; want neither", obs.err, obs.reloadErr)
	}
}

// A client's own LOAD REPLACE into a dataset's list (no SHA256) is the client's content, as an
// INITFILE is: no drift is reported and Reload does not overwrite it.
func TestClientLoadIsNotDrift(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\nu3\n"}, specstest.WithPolicy(stsv1alpha1.DatasetUpdateReload))
	notInSync := s.watchCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync)
	resp, err := http.Post(ts.url+"/sts/LOAD?FILENAME=users", "text/plain", strings.NewReader("fresh1\nfresh2\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ts.waitPolls(t, 3)
	if lines, _ := ts.store.Lines(context.Background(), "users"); !reflect.DeepEqual(lines, []string{"fresh1", "fresh2"}) {
		t.Errorf("users = %q: the client's content was overwritten", lines)
	}
	if seen := notInSync(); seen != "" {
		t.Errorf("DatasetsInSync was not True after a client's LOAD: %s", seen)
	}
}

// staleDeployment is the manager's client, except that it reads one Deployment as it was: a
// cache that has not caught up with the operator's own last write yet.
type staleDeployment struct {
	client.Client
	d *appsv1.Deployment
}

func (c staleDeployment) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if d, ok := obj.(*appsv1.Deployment); ok && key == client.ObjectKeyFromObject(c.d) {
		c.d.DeepCopyInto(d)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A reconcile that reads the Deployment from a cache still without the record of the last reload
// does not push the same change again: the second LOAD would give the lines consumed since the
// first out again.
func TestReloadIsNotRepeatedFromAStaleCache(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\nu3\n"}, specstest.WithPolicy(stsv1alpha1.DatasetUpdateReload))
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
	before := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, before)

	s.updateConfigMap(t, tableServer.Namespace, "users", "n1\nn2\n")
	eventually(t, reconcileWait, func() error {
		after := &appsv1.Deployment{}
		if err := s.k8s.Get(context.Background(), client.ObjectKeyFromObject(before), after); err != nil {
			return err
		}
		if after.Annotations[loadedDatasetsAnnotation] == before.Annotations[loadedDatasetsAnnotation] {
			return fmt.Errorf("the reload is not recorded on the Deployment yet")
		}
		return nil
	})
	if n := ts.loads.Load(); n != 1 {
		t.Fatalf("%d LOAD calls for one change", n)
	}
	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE") // a client consumes n1

	lagging := *s.reconciler
	lagging.Client = staleDeployment{Client: s.reconciler.Client, d: before}
	if _, err := lagging.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tableServer)}); err != nil {
		t.Fatal(err)
	}
	if n := ts.loads.Load(); n != 1 {
		t.Errorf("a reconcile on a stale Deployment pushed the change again (%d LOAD calls)", n)
	}
	if lines, _ := ts.store.Lines(context.Background(), "users"); !reflect.DeepEqual(lines, []string{"n2"}) {
		t.Errorf("users = %q, want the consumed line gone", lines)
	}
}

func TestInvalidResourcesAreRejected(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	cm := func(name string) stsv1alpha1.Dataset {
		return stsv1alpha1.Dataset{Name: name, ConfigMap: &stsv1alpha1.KeySelector{Name: "cm", Key: "k"}}
	}
	many := func(n int) specstest.Option {
		return func(tableServer *stsv1alpha1.SimpleTableServer) {
			for i := range n {
				tableServer.Spec.Datasets = append(tableServer.Spec.Datasets, cm(fmt.Sprintf("d%d", i)))
			}
		}
	}
	tests := map[string]struct {
		name string
		opts []specstest.Option
		want string
	}{
		"two sources": {opts: []specstest.Option{specstest.WithDataset(stsv1alpha1.Dataset{Name: "a",
			ConfigMap: &stsv1alpha1.KeySelector{Name: "cm", Key: "k"}, Secret: &stsv1alpha1.KeySelector{Name: "s", Key: "k"}})},
			want: "set exactly one source per dataset"},
		"no source":                   {opts: []specstest.Option{specstest.WithDataset(stsv1alpha1.Dataset{Name: "a"})}, want: "set exactly one source per dataset"},
		"duplicate names":             {opts: []specstest.Option{specstest.WithDataset(cm("a")), specstest.WithDataset(cm("a"))}, want: "dataset names must be unique"},
		"slash in a name":             {opts: []specstest.Option{specstest.WithDataset(cm("a/b"))}, want: "dataset name must not contain '/', '\\' or ':'"},
		"backslash":                   {opts: []specstest.Option{specstest.WithDataset(cm(`a\b`))}, want: "dataset name must not contain '/', '\\' or ':'"},
		"colon":                       {opts: []specstest.Option{specstest.WithDataset(cm("c:x"))}, want: "dataset name must not contain '/', '\\' or ':'"},
		"dot-dot":                     {opts: []specstest.Option{specstest.WithDataset(cm(".."))}, want: "dataset name must not be '.' or '..'"},
		"equals":                      {opts: []specstest.Option{specstest.WithDataset(cm("a=b"))}, want: "dataset name must not contain '='"},
		"129 characters":              {opts: []specstest.Option{specstest.WithDataset(cm(strings.Repeat("x", 129)))}, want: "may not be more than 128"},
		"empty name":                  {opts: []specstest.Option{specstest.WithDataset(cm(""))}, want: "should be at least 1"},
		"too many datasets":           {opts: []specstest.Option{many(65)}, want: "must have at most 64 items"},
		"bad key":                     {opts: []specstest.Option{specstest.WithConfigMapDataset("a", "cm", "a/b")}, want: "spec.datasets[0].configMap.key"},
		"path escaping":               {opts: []specstest.Option{specstest.WithClaimDataset("a", "c", "../x", "")}, want: "path must be relative to the claim's root"},
		"absolute path":               {opts: []specstest.Option{specstest.WithClaimDataset("a", "c", "/x", "")}, want: "path must be relative to the claim's root"},
		"equals in a match directory": {opts: []specstest.Option{specstest.WithClaimDataset("a", "c", "orders/date=2024", `.*\.csv`)}, want: "path cannot contain '=' when match is set"},
		"refresh too fast":            {opts: []specstest.Option{specstest.WithRefresh(500 * time.Millisecond)}, want: "statusRefreshInterval must be between 1s and 1h"},
		"refresh too slow":            {opts: []specstest.Option{specstest.WithRefresh(2 * time.Hour)}, want: "statusRefreshInterval must be between 1s and 1h"},
		"size and claim":              {opts: []specstest.Option{specstest.WithStorageSize("1Gi", nil), func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage.ExistingClaim = "c" }}, want: "set exactly one of existingClaim"},
		"size too small":              {opts: []specstest.Option{specstest.WithStorageSize("1Ki", nil)}, want: "size must be between 1Mi and 64Ti"},
		"size too large":              {opts: []specstest.Option{specstest.WithStorageSize("1Pi", nil)}, want: "size must be between 1Mi and 64Ti"},
		"class without size":          {opts: []specstest.Option{specstest.WithExistingClaim("c"), func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage.StorageClassName = ptr.To("fast") }}, want: "storageClassName applies only with size"},
		"selector pod label":          {opts: []specstest.Option{specstest.WithPodLabels(map[string]string{"app.kubernetes.io/instance": "x"})}, want: "podLabels must not set app.kubernetes.io/name"},
		"unknown policy":              {opts: []specstest.Option{specstest.WithPolicy("Sometimes")}, want: `Unsupported value: "Sometimes"`},
		"bad charset":                 {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{Charsets: stsv1alpha1.Charsets{Read: "UTF 8"}})}, want: "spec.server.charsets.read"},
		"fsyncInterval with Always": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{FsyncInterval: &metav1.Duration{Duration: time.Second}})},
			want: "fsyncInterval applies only with fsyncPolicy Interval"},
		"fsyncInterval too long": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{FsyncPolicy: stsv1alpha1.FsyncInterval, FsyncInterval: &metav1.Duration{Duration: time.Hour}})},
			want: "fsyncInterval must be between 1ms and 1m"},
		"unknown fsync policy": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{FsyncPolicy: "Never"})}, want: `Unsupported value: "Never"`},
		"unknown durability":   {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{Durability: "Sometimes"})}, want: `Unsupported value: "Sometimes"`},
		"maxTotalBytes too small": {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MaxTotalBytes: ptr.To(resource.MustParse("100"))})},
			want: "maxTotalBytes must be between 1Ki and 1Ti"},
		"maxLineBytes zero": {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MaxLineBytes: ptr.To[int32](0)})}, want: "spec.server.limits.maxLineBytes"},
		"maxLinesPerList zero": {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MaxLinesPerList: ptr.To[int64](0)})},
			want: "spec.server.limits.maxLinesPerList"},
		"maxNameBytes over what status shows": {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MaxNameBytes: ptr.To[int32](1025)})}, want: "spec.server.limits.maxNameBytes"},
		"no lists":                            {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MaxLists: ptr.To[int64](0)})}, want: "spec.server.limits.maxLists"},
		"minFreeBytes negative":               {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MinFreeBytes: ptr.To(resource.MustParse("-1"))})}, want: "minFreeBytes must be between 0 and 1Ti"},
		"maxWait too long": {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MaxWait: &metav1.Duration{Duration: 2 * time.Hour}})},
			want: "maxWait must be at most 1h"},
		"maxBodyBytes of 2Gi": {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{MaxBodyBytes: ptr.To(resource.MustParse("2Gi"))})},
			want: "maxBodyBytes must be between 1Ki and 1Gi"},
		"a regex timeout of 2m": {opts: []specstest.Option{specstest.WithLimits(stsv1alpha1.ServerLimits{RegexTimeout: &metav1.Duration{Duration: 2 * time.Minute}})},
			want: "regexTimeout must be between 1ms and 1m"},
		"no live streams": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{UI: stsv1alpha1.UIOptions{MaxStreams: ptr.To[int32](0)}})},
			want: "spec.server.ui.maxStreams"},
		"a stream write timeout of 100ms": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{UI: stsv1alpha1.UIOptions{StreamWriteTimeout: &metav1.Duration{Duration: 100 * time.Millisecond}}})},
			want: "streamWriteTimeout must be between 1s and 10m"},
		"a lease of two days": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{Leases: stsv1alpha1.LeaseOptions{MaxLease: &metav1.Duration{Duration: 48 * time.Hour}}})},
			want: "maxLease must be between 1s and 24h"},
		"a request id window of 1ms": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{Leases: stsv1alpha1.LeaseOptions{RequestIDWindow: &metav1.Duration{Duration: time.Millisecond}}})},
			want: "requestIDWindow must be between 1s and 24h"},
		"negative max deliveries": {opts: []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{Leases: stsv1alpha1.LeaseOptions{MaxDeliveries: ptr.To[int32](-1)}})},
			want: "spec.server.leases.maxDeliveries"},
		"two memory replicas":        {opts: []specstest.Option{func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Replicas = 2 }}, want: "replicas above 1 need a shared backend"},
		"65 replicas":                {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 65)}, want: "spec.replicas"},
		"a claim for several pods":   {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 2), specstest.WithStorageSize("1Gi", nil)}, want: "storage.size makes a ReadWriteOnce claim"},
		"a journal on Redis":         {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 1), specstest.WithServer(stsv1alpha1.ServerOptions{Durability: stsv1alpha1.DurabilityEnabled})}, want: "server.durability Enabled applies to the memory backend only"},
		"a memory limit on Redis":    {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 1), specstest.WithLimits(stsv1alpha1.ServerLimits{MaxTotalBytes: ptr.To(resource.MustParse("1Mi"))})}, want: "maxTotalBytes applies to the memory backend only"},
		"a Redis for memory":         {opts: []specstest.Option{func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Backend.Redis = specstest.RedisAt("r:6379") }}, want: "backend.redis applies only with type redis"},
		"an unknown backend":         {opts: []specstest.Option{func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Backend.Type = "etcd" }}, want: `Unsupported value: "etcd"`},
		"address and sentinel":       {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "r:6379", Sentinel: &stsv1alpha1.RedisSentinel{MasterName: "m", Addresses: []string{"s:26379"}}}}, 1)}, want: "set address or sentinel, not both"},
		"an address without a port":  {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("redis.svc"), 1)}, want: "spec.backend.redis.address"},
		"a URL as the address":       {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("redis://r:6379"), 1)}, want: "spec.backend.redis.address"},
		"sentinel without a master":  {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Sentinel: &stsv1alpha1.RedisSentinel{Addresses: []string{"s:26379"}}}}, 1)}, want: "spec.backend.redis.sentinel.masterName"},
		"sentinel without sentinels": {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Sentinel: &stsv1alpha1.RedisSentinel{MasterName: "m", Addresses: []string{}}}}, 1)}, want: "spec.backend.redis.sentinel.addresses"},
		"cluster by sentinel":        {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Cluster: ptr.To(true), Sentinel: &stsv1alpha1.RedisSentinel{MasterName: "m", Addresses: []string{"s:26379"}}}}, 1)}, want: "cluster needs address"},
		"cluster min replicas":       {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "r:6379", Cluster: ptr.To(true)}, MinReplicas: 1}, 1)}, want: "minReplicas is not supported with cluster"},
		"cluster database":           {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "r:6379", Cluster: ptr.To(true), Database: ptr.To[int32](2)}}, 1)}, want: "a Redis Cluster has only database 0"},
		"database 16":                {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "r:6379", Database: ptr.To[int32](16)}}, 1)}, want: "spec.backend.redis.database"},
		"a CA without TLS":           {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "r:6379", TLS: &stsv1alpha1.RedisTLS{CASecret: &stsv1alpha1.KeySelector{Name: "ca", Key: "ca.crt"}}}}, 1)}, want: "tls.caSecret applies only with tls.enabled"},
		"a brace in the prefix":      {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "r:6379"}, KeyPrefix: "a{b"}, 1)}, want: "keyPrefix must not contain '{' or '}'"},
		"min replicas timeout 1h":    {opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "r:6379"}, MinReplicas: 1, MinReplicasTimeout: &metav1.Duration{Duration: time.Hour}}, 1)}, want: "minReplicasTimeout must be between 10ms and 1m"},
		"name not a label":           {name: "1tables", want: "metadata.name must be a DNS label"},
		"name too long":              {name: strings.Repeat("t", 64), want: "metadata.name must be a DNS label"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objName := "tables"
			if tc.name != "" {
				objName = tc.name
			}
			tableServer := specstest.New(objName, append([]specstest.Option{specstest.InNamespace(ns)}, tc.opts...)...)
			tableServer.UID = ""
			err := s.k8s.Create(context.Background(), tableServer)
			if err == nil {
				_ = s.k8s.Delete(context.Background(), tableServer)
				t.Fatalf("accepted; want a rejection mentioning %q", tc.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant an Invalid error mentioning %q", err, tc.want)
			}
			t.Logf("rejected: %v", err)
		})
	}
}

func TestStorageIsImmutable(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	tests := map[string]struct {
		opts   []specstest.Option
		change func(*stsv1alpha1.SimpleTableServer)
		want   string
	}{
		"size changed": {[]specstest.Option{specstest.WithStorageSize("1Gi", nil)},
			func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi")) },
			"storage cannot be changed"},
		"storage added": {nil,
			func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage = &stsv1alpha1.Storage{ExistingClaim: "c"} },
			"storage cannot be added or removed"},
		"storage removed": {[]specstest.Option{specstest.WithExistingClaim("c")},
			func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage = nil },
			"storage cannot be added or removed"},
		"memory to redis": {nil,
			func(s *stsv1alpha1.SimpleTableServer) { specstest.WithRedis(specstest.RedisAt("r:6379"), 1)(s) },
			"backend.type cannot be changed"},
		"redis to memory": {[]specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 1)},
			func(s *stsv1alpha1.SimpleTableServer) {
				s.Spec.Backend = stsv1alpha1.Backend{Type: stsv1alpha1.BackendMemory}
			},
			"backend.type cannot be changed"},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			i++
			tableServer := specstest.New(fmt.Sprintf("immutable%d", i), append([]specstest.Option{specstest.InNamespace(ns)}, tc.opts...)...)
			tableServer.UID = ""
			s.create(t, tableServer)
			tc.change(tableServer)
			err := s.k8s.Update(context.Background(), tableServer)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("update error %v\nwant an Invalid error mentioning %q", err, tc.want)
			}
		})
	}
	// Everything else may change.
	tableServer := specstest.New("mutable", specstest.InNamespace(ns), specstest.WithStorageSize("1Gi", nil))
	tableServer.UID = ""
	s.create(t, tableServer)
	tableServer.Spec.Datasets = []stsv1alpha1.Dataset{{Name: "a", ConfigMap: &stsv1alpha1.KeySelector{Name: "cm", Key: "k"}}}
	tableServer.Spec.DatasetUpdatePolicy = stsv1alpha1.DatasetUpdateReload
	if err := s.k8s.Update(context.Background(), tableServer); err != nil {
		t.Errorf("a change that keeps storage was refused: %v", err)
	}
	// A Redis backend may move to another Redis, and scale.
	onRedis := specstest.New("mutable-redis", specstest.InNamespace(ns), specstest.WithRedis(specstest.RedisAt("r:6379"), 1))
	onRedis.UID = ""
	s.create(t, onRedis)
	onRedis.Spec.Backend.Redis.Address = "other:6379"
	onRedis.Spec.Replicas = 3
	if err := s.k8s.Update(context.Background(), onRedis); err != nil {
		t.Errorf("a new Redis address and replica count were refused: %v", err)
	}
}

func TestAnObjectOfAnotherOwnerIsNotTakenOver(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	theirs := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	s.create(t, theirs)
	tableServer := specstest.New("taken", specstest.InNamespace(ns))
	tableServer.UID = ""
	s.create(t, tableServer)

	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonApplyFailed, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionStalled); !strings.Contains(c.Message, `Service "taken" exists and is not managed by this SimpleTableServer`) {
		t.Errorf("Stalled message %q does not say what to fix", c.Message)
	}
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonApplyFailed, `Service "taken"`)
	})
	s.get(t, theirs)
	if len(theirs.OwnerReferences) != 0 || theirs.Spec.Ports[0].Port != 80 {
		t.Errorf("the other Service was changed: %+v", theirs)
	}
}

func TestServiceAnnotationRemovedFromTheSpecLeavesTheService(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, _ := s.servedTableServer(t, "", map[string]string{"users": "u1\n"}, func(tableServer *stsv1alpha1.SimpleTableServer) {
		tableServer.Spec.Service.Annotations = map[string]string{"lb": "internal", "team": "perf"}
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, svc)
	// Another controller annotates the Service too.
	svc.Annotations["cloud.example/id"] = "lb-1"
	if err := s.k8s.Update(context.Background(), svc); err != nil {
		t.Fatal(err)
	}

	s.update(t, tableServer.DeepCopy(), func(cur *stsv1alpha1.SimpleTableServer) {
		cur.Spec.Service.Annotations = map[string]string{"lb": "public"}
	})
	eventually(t, reconcileWait, func() error {
		s.get(t, svc)
		a := svc.Annotations
		if _, stale := a["team"]; stale || a["lb"] != "public" || a["cloud.example/id"] != "lb-1" {
			return fmt.Errorf("Service annotations %v, want lb=public, no team, the other controller's kept", a)
		}
		return nil
	})
}

func TestASpecTheServerCannotRunStallsWithoutTouchingThePod(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, _ := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tableServer.Namespace, Name: tableServer.Name}}
	s.get(t, d)

	// Names the schema accepts but the server does not know.
	cur := tableServer.DeepCopy()
	s.update(t, cur, func(cur *stsv1alpha1.SimpleTableServer) {
		cur.Spec.Server.Charsets.Read = "UTF-9"
		cur.Spec.Datasets = append(cur.Spec.Datasets, stsv1alpha1.Dataset{Name: "orders",
			PersistentVolumeClaim: &stsv1alpha1.ClaimSource{ClaimName: "data", Path: "orders", Match: "orders-(.csv"}})
	})
	cur = s.waitForCondition(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonInvalidSpec, reconcileWait)
	c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionStalled)
	for _, part := range []string{`spec.server.charsets.read: unknown charset "UTF-9"`, `spec.datasets[1].persistentVolumeClaim.match "orders-(.csv"`} {
		if !strings.Contains(c.Message, part) {
			t.Errorf("Stalled message %q lacks %q", c.Message, part)
		}
	}
	if res := computeKstatus(t, cur); res.Status != kstatus.FailedStatus {
		t.Errorf("kstatus %s, want Failed", res.Status)
	}
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonInvalidSpec, "UTF-9")
	})
	after := d.DeepCopy()
	s.get(t, after)
	if after.ResourceVersion != d.ResourceVersion {
		t.Errorf("the Deployment was written (resourceVersion %s -> %s) for a spec the server cannot run", d.ResourceVersion, after.ResourceVersion)
	}
	// The server still serves the previous spec.
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
}

func TestAReloadTheServerRefusesStallsAndKeepsTheList(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	s.create(t, configMap(ns, "users", map[string]string{"lines": "u1\nu2\n"}))
	// The server takes request bodies of at most 16 bytes.
	ts := startTableServer(t, "", map[string][]string{"users": {"u1", "u2"}}, func(c *stsserver.Config) { c.MaxBodyBytes = 16 })
	s.endpoints.set(t, ns+"/tables", ts.url)
	s.rollouts.in(t, ns)
	tableServer := specstest.New("tables", specstest.InNamespace(ns), specstest.WithRefresh(time.Second), specstest.WithPolicy(stsv1alpha1.DatasetUpdateReload),
		specstest.WithConfigMapDataset("users", "users", "lines"))
	tableServer.UID = ""
	s.create(t, tableServer)
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)

	s.updateConfigMap(t, ns, "users", strings.Repeat("a-much-longer-line\n", 4))
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonReloadFailed, reconcileWait)
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionStalled); !strings.Contains(c.Message, "HTTP 413") {
		t.Errorf("Stalled message %q does not give the server's answer", c.Message)
	}
	for typ, want := range map[string]string{
		stsv1alpha1.ConditionReady:          "True/Serving",
		stsv1alpha1.ConditionDatasetsInSync: "False/ReloadFailed",
	} {
		if c := meta.FindStatusCondition(cur.Status.Conditions, typ); string(c.Status)+"/"+c.Reason != want {
			t.Errorf("%s = %+v, want %s", typ, c, want)
		}
	}
	if res := computeKstatus(t, cur); res.Status != kstatus.FailedStatus {
		t.Errorf("kstatus %s, want Failed", res.Status)
	}
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonReloadFailed, "HTTP 413")
	})
	if lines, _ := ts.store.Lines(context.Background(), "users"); !reflect.DeepEqual(lines, []string{"u1", "u2"}) {
		t.Errorf("users = %q after a refused reload", lines)
	}
}
