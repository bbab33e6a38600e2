package controller

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The envtest suite: a real kube-apiserver and etcd (KUBEBUILDER_ASSETS, which `make test`
// builds and sets) with the CRD from config/crd/bases, and the reconciler running in a
// controller-runtime manager exactly as cmd/manager sets it up, except that it reaches table
// servers through testEndpoints. envtest runs no built-in controllers: no pods, no garbage
// collection, no Deployment status unless a test writes it or hands its namespace to rollouts.
var (
	// suite is nil when KUBEBUILDER_ASSETS is unset; envtest tests then skip.
	suite *envtestSuite
	// unreachableURL refuses connections at once: port 1 on loopback has no listener.
	unreachableURL = "http://127.0.0.1:1"
)

type envtestSuite struct {
	env        *envtest.Environment
	k8s        client.Client // uncached, for the tests' own reads and writes
	reconciler *SimpleTableServerReconciler
	endpoints  *testEndpoints
	writes     *writeCounter
	rollouts   *rollouts
}

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "controller: KUBEBUILDER_ASSETS is unset, so the envtest tests skip; `make test` builds kube-apiserver and etcd (hack/envtest.sh) and sets it")
		return m.Run()
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	s, stop, err := startSuite()
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller: starting envtest:", err)
		return 1
	}
	suite = s
	defer stop()
	return m.Run()
}

func startSuite() (*envtestSuite, func(), error) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	if err := stsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: CacheByObject()},
	})
	if err != nil {
		return nil, nil, err
	}
	s := &envtestSuite{
		env: env, k8s: k8s,
		endpoints: &testEndpoints{urls: map[string]string{}},
		writes:    &writeCounter{byNamespace: map[string]int{}},
		rollouts:  &rollouts{k8s: k8s, namespaces: map[string]bool{}},
	}
	s.reconciler = &SimpleTableServerReconciler{
		Client:       &countingClient{Client: mgr.GetClient(), counter: s.writes},
		Recorder:     mgr.GetEventRecorder("sts-operator"),
		DefaultImage: specstest.Image,
		Endpoints:    s.endpoints,
		HTTPClient:   NewHTTPClient(2 * time.Second),
		APIReader:    &countingReader{Reader: mgr.GetAPIReader()},
		// Set here, never by a test: the reconciler's goroutines read it all along.
		Namespace: "sts-system", // as the chart's POD_NAMESPACE would
	}
	if err := s.reconciler.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	rolloutsDone := make(chan struct{})
	go func() { s.rollouts.run(ctx); close(rolloutsDone) }()
	stop := func() {
		cancel()
		<-rolloutsDone
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "controller: manager:", err)
		}
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "controller: stopping envtest:", err)
		}
	}
	return s, stop, nil
}

// requireEnvtest skips t when the suite has no API server.
func requireEnvtest(t testing.TB) *envtestSuite {
	t.Helper()
	if suite == nil {
		testutil.Skip(t, "KUBEBUILDER_ASSETS is unset: run `make test`, which builds the envtest control plane and sets it")
	}
	return suite
}

// testEndpoints points resources at table servers that tests run on 127.0.0.1, by
// "namespace/name" or by namespace; any other resource gets unreachableURL.
type testEndpoints struct {
	mu   sync.Mutex
	urls map[string]string
}

// BaseURL implements EndpointResolver.
func (e *testEndpoints) BaseURL(tableServer *stsv1alpha1.SimpleTableServer) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if u, ok := e.urls[tableServer.Namespace+"/"+tableServer.Name]; ok {
		return u
	}
	if u, ok := e.urls[tableServer.Namespace]; ok {
		return u
	}
	return unreachableURL
}

// PodURL implements EndpointResolver: a pod is reached at the URL set for "pod:namespace/name".
func (e *testEndpoints) PodURL(pod *corev1.Pod) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if u, ok := e.urls["pod:"+pod.Namespace+"/"+pod.Name]; ok {
		return u
	}
	return unreachableURL
}

// set points key ("namespace/name", "namespace" or "pod:namespace/name") at url until t ends.
func (e *testEndpoints) set(t testing.TB, key, url string) {
	e.mu.Lock()
	e.urls[key] = url
	e.mu.Unlock()
	t.Cleanup(func() {
		e.mu.Lock()
		delete(e.urls, key)
		e.mu.Unlock()
	})
}

// rollouts plays the Deployment controller, which envtest does not run, in the namespaces that
// tests hand it: a Deployment there whose status lags its generation gets the status of a
// finished rollout, its pods available.
type rollouts struct {
	k8s        client.Client
	mu         sync.Mutex
	namespaces map[string]bool
}

// in makes rollouts finish in ns until t ends.
func (r *rollouts) in(t testing.TB, ns string) {
	r.mu.Lock()
	r.namespaces[ns] = true
	r.mu.Unlock()
	t.Cleanup(func() {
		r.mu.Lock()
		delete(r.namespaces, ns)
		r.mu.Unlock()
	})
}

// run finishes the rollouts every 100ms until ctx ends. A write that conflicts with the
// operator's is tried again at the next tick.
func (r *rollouts) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.mu.Lock()
		namespaces := slices.Collect(maps.Keys(r.namespaces))
		r.mu.Unlock()
		for _, ns := range namespaces {
			var list appsv1.DeploymentList
			if err := r.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
				continue
			}
			for i := range list.Items {
				d := &list.Items[i]
				if d.Status.ObservedGeneration == d.Generation {
					continue
				}
				n := ptr.Deref(d.Spec.Replicas, 1)
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
				_ = r.k8s.Status().Update(ctx, d)
			}
		}
	}
}

// countingReader counts the reads of each object that go to the API server itself, and fails
// those in the namespaces a test asks it to.
type countingReader struct {
	client.Reader
	mu    sync.Mutex
	reads map[string]int   // by "namespace/name"
	fail  map[string]error // by namespace
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	if c.reads == nil {
		c.reads = map[string]int{}
	}
	c.reads[key.String()]++
	err := c.fail[key.Namespace]
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

// failIn makes every read in ns fail with err until t ends.
func (c *countingReader) failIn(t testing.TB, ns string, err error) {
	c.mu.Lock()
	if c.fail == nil {
		c.fail = map[string]error{}
	}
	c.fail[ns] = err
	c.mu.Unlock()
	t.Cleanup(func() {
		c.mu.Lock()
		delete(c.fail, ns)
		c.mu.Unlock()
	})
}

func (c *countingReader) readsOf(key client.ObjectKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[key.String()]
}

// writeCounter counts the reconciler's API writes per namespace.
type writeCounter struct {
	mu          sync.Mutex
	byNamespace map[string]int
}

func (w *writeCounter) add(obj client.Object) {
	w.mu.Lock()
	w.byNamespace[obj.GetNamespace()]++
	w.mu.Unlock()
}

func (w *writeCounter) in(ns string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byNamespace[ns]
}

// countingClient is the reconciler's client with every write counted, including writes that
// the API server finds to change nothing (those keep resourceVersions but still cost a request).
type countingClient struct {
	client.Client
	counter *writeCounter
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.counter.add(obj)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.counter.add(obj)
	return c.Client.Update(ctx, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.counter.add(obj)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.counter.add(obj)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *countingClient) Status() client.SubResourceWriter {
	return countingStatusWriter{c.Client.Status(), c.counter}
}

type countingStatusWriter struct {
	client.SubResourceWriter
	counter *writeCounter
}

func (w countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.counter.add(obj)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.counter.add(obj)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// newNamespace creates a namespace for one test; at the end the test's SimpleTableServers are
// deleted so that the manager stops polling their servers (envtest never removes namespaces).
func (s *envtestSuite) newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	if err := s.k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		if err := s.k8s.DeleteAllOf(context.Background(), &stsv1alpha1.SimpleTableServer{}, client.InNamespace(ns.Name)); err != nil {
			t.Errorf("delete the test's SimpleTableServers: %v", err)
		}
	})
	return ns.Name
}

func (s *envtestSuite) create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := s.k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// get reads the current obj from the API server.
func (s *envtestSuite) get(t testing.TB, obj client.Object) {
	t.Helper()
	if err := s.k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %T %s: %v", obj, obj.GetName(), err)
	}
}

// update changes tableServer as a user would, again on the latest copy until the API server takes it:
// the reconciler writes the resource's status meanwhile, and an update of an older copy conflicts.
// tableServer holds what was written.
func (s *envtestSuite) update(t testing.TB, tableServer *stsv1alpha1.SimpleTableServer, change func(*stsv1alpha1.SimpleTableServer)) {
	t.Helper()
	eventually(t, reconcileWait, func() error {
		if err := s.k8s.Get(context.Background(), client.ObjectKeyFromObject(tableServer), tableServer); err != nil {
			return err
		}
		change(tableServer)
		return s.k8s.Update(context.Background(), tableServer)
	})
}

// eventually is testutil.Eventually every 50ms: envtest's API server and the loopback table
// servers answer in milliseconds.
func eventually(t testing.TB, timeout time.Duration, check func() error) {
	t.Helper()
	testutil.Eventually(t, timeout, 50*time.Millisecond, check)
}

// waitForCondition waits until tableServer (re-read) has condition typ with status and reason for its
// current generation, and returns the resource as read then.
func (s *envtestSuite) waitForCondition(t testing.TB, tableServer *stsv1alpha1.SimpleTableServer, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *stsv1alpha1.SimpleTableServer {
	t.Helper()
	return s.waitForMessage(t, tableServer, typ, status, reason, "", timeout)
}

// waitForMessage is waitForCondition for a condition whose message also holds part.
func (s *envtestSuite) waitForMessage(t testing.TB, tableServer *stsv1alpha1.SimpleTableServer, typ string, status metav1.ConditionStatus, reason, part string, timeout time.Duration) *stsv1alpha1.SimpleTableServer {
	t.Helper()
	cur := &stsv1alpha1.SimpleTableServer{}
	eventually(t, timeout, func() error {
		if err := s.k8s.Get(context.Background(), client.ObjectKeyFromObject(tableServer), cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != cur.Generation || !strings.Contains(c.Message, part) {
			return fmt.Errorf("%s condition is %+v, want %s/%s at generation %d saying %q", typ, c, status, reason, cur.Generation, part)
		}
		return nil
	})
	return cur
}

// forEachEvent calls f with the type, reason and note of every event about sts.
func (s *envtestSuite) forEachEvent(tableServer *stsv1alpha1.SimpleTableServer, f func(eventType, reason, note string)) error {
	var events eventsv1.EventList
	if err := s.k8s.List(context.Background(), &events, client.InNamespace(tableServer.Namespace)); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.Regarding.Kind == "SimpleTableServer" && e.Regarding.Name == tableServer.Name {
			f(e.Type, e.Reason, e.Note)
		}
	}
	return nil
}
