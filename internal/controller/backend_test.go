package controller

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

func TestDefaultRedis(t *testing.T) {
	def := &stsv1alpha1.RedisConnection{Address: "shared.redis.svc:6379", CredentialsSecret: &stsv1alpha1.RedisCredentials{Name: "redis"}}
	tests := map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		def         *stsv1alpha1.RedisConnection
		wantAddress string
		// wantSecret and wantDatabase, when set, are the credentials Secret and database run with.
		wantSecret   string
		wantDatabase int32
		wantProblem  bool
	}{
		"memory: untouched":                {tableServer: specstest.New("a"), def: def},
		"redis naming none: the default":   {tableServer: specstest.New("a", specstest.WithRedis(nil, 2)), def: def, wantAddress: "shared.redis.svc:6379"},
		"redis with a prefix: the default": {tableServer: specstest.New("a", specstest.WithRedis(&stsv1alpha1.RedisBackend{KeyPrefix: "p:"}, 2)), def: def, wantAddress: "shared.redis.svc:6379"},
		"redis naming its own: kept":       {tableServer: specstest.New("a", specstest.WithRedis(specstest.RedisAt("own:6379"), 2)), def: def, wantAddress: "own:6379"},
		"redis with its own credentials: the default with them": {
			tableServer: specstest.New("a", specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{
				CredentialsSecret: &stsv1alpha1.RedisCredentials{Name: "team-acl", UsernameKey: "user"}, Database: ptr.To[int32](2)}}, 2)),
			def: def, wantAddress: "shared.redis.svc:6379", wantSecret: "team-acl", wantDatabase: 2,
		},
		"redis naming none, no default: bad": {tableServer: specstest.New("a", specstest.WithRedis(nil, 2)), wantProblem: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.tableServer.DeepCopy()
			run := (&specs.Defaults{Redis: tc.def}).Apply(tc.tableServer)
			if !reflect.DeepEqual(tc.tableServer, before) {
				t.Error("Defaults.Apply changed the resource itself")
			}
			var address string
			if r := run.Spec.Backend.Redis; r != nil {
				address = r.Address
			}
			if address != tc.wantAddress {
				t.Errorf("address %q, want %q", address, tc.wantAddress)
			}
			if r := run.Spec.Backend.Redis; r != nil && tc.tableServer.Spec.Backend.Redis != nil && r.KeyPrefix != tc.tableServer.Spec.Backend.Redis.KeyPrefix {
				t.Errorf("key prefix %q, want the resource's %q", r.KeyPrefix, tc.tableServer.Spec.Backend.Redis.KeyPrefix)
			}
			if r := run.Spec.Backend.Redis; tc.wantSecret != "" && (r.CredentialsSecret.Name != tc.wantSecret || *r.Database != tc.wantDatabase) {
				t.Errorf("credentials %+v database %v, want the resource's %q and %d", r.CredentialsSecret, r.Database, tc.wantSecret, tc.wantDatabase)
			}
			if got := len(specProblems(run)) > 0; got != tc.wantProblem {
				t.Errorf("spec problems %q, want some: %t", specProblems(run), tc.wantProblem)
			}
		})
	}
}

// redisSecret creates the Secret "redis" in ns with data.
func (s *envtestSuite) redisSecret(t *testing.T, ns string, data map[string]string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis"}, StringData: data}
	s.create(t, secret)
}

func TestRedisBackedReplicasScaleWithTheirBudget(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	s.rollouts.in(t, ns)
	s.redisSecret(t, ns, map[string]string{"password": "secret"})
	r := specstest.RedisAt("redis.redis.svc:6379")
	r.CredentialsSecret = &stsv1alpha1.RedisCredentials{Name: "redis"}
	tableServer := specstest.New("tables", specstest.InNamespace(ns), specstest.WithRedis(r, 3))
	tableServer.UID = ""
	s.create(t, tableServer)

	budget := func(want bool) {
		t.Helper()
		eventually(t, reconcileWait, func() error {
			var pdb policyv1.PodDisruptionBudget
			err := s.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tables"}, &pdb)
			switch {
			case want && err != nil:
				return err
			case !want && !apierrors.IsNotFound(err):
				return fmt.Errorf("budget still there: %v", err)
			}
			return nil
		})
	}
	replicasNow := func(want int32) {
		t.Helper()
		eventually(t, reconcileWait, func() error {
			var d appsv1.Deployment
			if err := s.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "tables"}, &d); err != nil {
				return err
			}
			cur := tableServer.DeepCopy()
			s.get(t, cur)
			if got := *d.Spec.Replicas; got != want || cur.Status.Replicas != want || cur.Status.AvailableReplicas != want {
				return fmt.Errorf("Deployment replicas %d, status %d/%d available, want %d", got, cur.Status.AvailableReplicas, cur.Status.Replicas, want)
			}
			return nil
		})
	}
	replicasNow(3)
	budget(true)

	// kubectl scale simpletableserver/tables --replicas=1, through the scale subresource.
	scale := func(n int32) {
		t.Helper()
		sc := &autoscalingv1.Scale{}
		if err := s.k8s.SubResource("scale").Get(context.Background(), tableServer, sc); err != nil {
			t.Fatal(err)
		}
		if sc.Status.Selector != "app.kubernetes.io/instance=tables,app.kubernetes.io/name=simpletableserver" {
			t.Errorf("scale selector %q", sc.Status.Selector)
		}
		sc.Spec.Replicas = n
		if err := s.k8s.SubResource("scale").Update(context.Background(), tableServer, client.WithSubResourceBody(sc)); err != nil {
			t.Fatal(err)
		}
	}
	scale(1)
	replicasNow(1)
	budget(false)
	scale(2)
	replicasNow(2)
	budget(true)
}

func TestMissingRedisSecretStallsNamingSecretAndKey(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	s.rollouts.in(t, ns)
	r := specstest.RedisAt("redis.redis.svc:6379")
	r.CredentialsSecret = &stsv1alpha1.RedisCredentials{Name: "redis", UsernameKey: "user"}
	tableServer := specstest.New("tables", specstest.InNamespace(ns), specstest.WithRedis(r, 2))
	tableServer.UID = ""
	s.create(t, tableServer)

	stalled := func(part string) {
		t.Helper()
		s.waitForMessage(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonSourceMissing, part, reconcileWait)
		eventually(t, reconcileWait, func() error {
			return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonSourceMissing, part)
		})
		var d appsv1.Deployment
		if err := s.k8s.Get(context.Background(), client.ObjectKeyFromObject(tableServer), &d); !apierrors.IsNotFound(err) {
			t.Errorf("a Deployment whose pods could not start exists: %v", err)
		}
	}
	stalled(`Secret "redis" (backend.redis.credentialsSecret)`)
	s.redisSecret(t, ns, map[string]string{"password": "secret"})
	stalled(`key "user" of Secret "redis" (backend.redis.credentialsSecret)`)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "redis"}}
	s.get(t, secret)
	secret.Data["user"] = []byte("sts")
	if err := s.k8s.Update(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, reconcileWait, func() error {
		var d appsv1.Deployment
		return s.k8s.Get(context.Background(), client.ObjectKeyFromObject(tableServer), &d)
	})
}

func TestRedisNamingNoRedisWithoutADefaultStalls(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	tableServer := specstest.New("tables", specstest.InNamespace(ns), specstest.WithRedis(nil, 2))
	tableServer.UID = ""
	s.create(t, tableServer)
	s.waitForMessage(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonInvalidSpec, "tableServer.defaultRedis", reconcileWait)
}

// TestBackendUnavailableFollowsRedis runs a real table server on a real Redis and stops Redis:
// the resource says BackendUnavailable, first from the Service's answer, then, once the Service
// no longer answers (its pods unready), from a pod asked directly; and Ready again when Redis is
// back, with nothing served twice.
func TestBackendUnavailableFollowsRedis(t *testing.T) {
	s := requireEnvtest(t)
	rs := redistest.Start(t, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "always")) // keeps the lists across the outage
	ts := startTableServerOn(t, redisStore(t, rs), "", map[string][]string{"users": {"u1", "u2", "u3"}})

	tableServer := s.servedOnRedis(t, rs, ts, "u1\nu2\nu3\n")
	ns := tableServer.Namespace
	if got := ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE"); !strings.Contains(got, "u1") {
		t.Fatalf("READ = %q", got)
	}

	rs.Kill()
	unavailable := func(part string) {
		t.Helper()
		cur := s.waitForMessage(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionFalse, stsv1alpha1.ReasonBackendUnavailable, part, reconcileWait)
		if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionReady); !strings.Contains(c.Message, rs.Addr) {
			t.Errorf("Ready says %q, want it to name Redis at %s", c.Message, rs.Addr)
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionReconciling); c.Status != metav1.ConditionTrue {
			t.Errorf("Reconciling %+v: Redis coming back needs no user", c)
		}
		eventually(t, reconcileWait, func() error {
			return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonBackendUnavailable, part)
		})
	}
	unavailable("STATUS: HTTP 503")

	// The pods are unready now: the Service has no endpoint, and the operator asks a pod.
	s.endpoints.set(t, ns+"/tables", unreachableURL)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tables-7d9f-x2x4q", Labels: specs.SelectorLabels(tableServer)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: specs.ContainerName, Image: specstest.Image}}},
	}
	s.create(t, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.7"}
	if err := s.k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	s.endpoints.set(t, "pod:"+ns+"/"+pod.Name, ts.url)
	unavailable("pod " + pod.Name)

	rs.Restart(t)
	s.endpoints.set(t, ns+"/tables", ts.url)
	cur := s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, 2*reconcileWait)
	if got := listLength(cur, "users"); got != 2 {
		t.Errorf("status says users has %d lines, want 2: the line read before the outage stays consumed", got)
	}
}

// servedOnRedis creates a resource "tables" with three replicas on rs whose dataset "users" is a
// ConfigMap holding content, served by ts (the Service's pod), and waits until it is Ready.
func (s *envtestSuite) servedOnRedis(t *testing.T, rs *redistest.Server, ts *testTableServer, content string, opts ...specstest.Option) *stsv1alpha1.SimpleTableServer {
	t.Helper()
	ns := s.newNamespace(t)
	s.rollouts.in(t, ns)
	s.create(t, configMap(ns, "users", map[string]string{"lines": content}))
	opts = append([]specstest.Option{specstest.InNamespace(ns), specstest.WithRefresh(time.Second), specstest.WithConfigMapDataset("users", "users", "lines"), specstest.WithRedis(specstest.RedisAt(rs.Addr), 3)}, opts...)
	tableServer := specstest.New("tables", opts...)
	tableServer.UID = ""
	s.endpoints.set(t, ns+"/tables", ts.url)
	s.create(t, tableServer)
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)
	return tableServer
}

// redisStore is a table server's store on rs, with the key prefix every test server on rs shares.
func redisStore(t *testing.T, rs *redistest.Server) *redisstore.Store {
	t.Helper()
	rc, err := redisstore.Connection{URL: rs.URL()}.Client()
	if err != nil {
		t.Fatal(err)
	}
	st, err := redisstore.New(redisstore.Options{Client: rc, KeyPrefix: "sts:test:", HealthInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// A server refuses commands while its store is not up yet, as a pod is not ready then.
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the store up on Redis", st.Up)
	return st
}

// TestReloadOnRedisReplacesTheSharedListOnce: under the Reload policy a changed ConfigMap is
// pushed once, through the Service, into the list every replica shares; a line a client
// consumed through another replica before the change is not pushed again by that replica.
func TestReloadOnRedisReplacesTheSharedListOnce(t *testing.T) {
	s := requireEnvtest(t)
	rs := redistest.Start(t)
	const v1 = "u1\nu2\nu3\n"
	a := startTableServerOn(t, redisStore(t, rs), "", nil) // the one the Service routes the operator to
	b := startTableServerOn(t, redisStore(t, rs), "", nil) // another replica
	a.loadDataset(t, "users", v1)                          // what the first pod's startup load did

	tableServer := s.servedOnRedis(t, rs, a, v1, specstest.WithPolicy(stsv1alpha1.DatasetUpdateReload))
	ns := tableServer.Namespace
	if got := b.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE"); !strings.Contains(got, "u1") {
		t.Fatalf("READ through the other replica = %q", got)
	}

	s.updateConfigMap(t, ns, "users", "n1\nn2\n")
	eventually(t, reconcileWait, func() error {
		lines, err := b.store.Lines(context.Background(), "users")
		if err != nil || !reflect.DeepEqual(lines, []string{"n1", "n2"}) {
			return fmt.Errorf("the other replica sees users = %q, %v", lines, err)
		}
		return nil
	})
	s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionTrue, stsv1alpha1.ReasonInSync, reconcileWait)
	a.waitPolls(t, 3)
	if n, m := a.loads.Load(), b.loads.Load(); n+m != 2 || m != 0 {
		t.Errorf("LOAD calls: %d through the Service's replica, %d through the other; want the startup's and one for the change", n, m)
	}
}

// TestAListRedisLostIsReportedNotReloaded: a dataset's list that Redis no longer holds (a
// restart without persistence) stalls the resource with a message that says what happened
// and how to load it again. TestAListRedisLostIsNotPushedAgain checks that no LOAD follows.
func TestAListRedisLostIsReportedNotReloaded(t *testing.T) {
	tableServer := specstest.New("a", specstest.WithConfigMapDataset("users", "logins", "users"), specstest.WithRedis(specstest.RedisAt("r:6379"), 3))
	st := computeStatus(tableServer, observe(sourceHash("users", "h1"), deployed(rolledOutNow, map[string]string{"users": "h1"}), answered()), metav1.Now())
	c := meta.FindStatusCondition(st.Conditions, stsv1alpha1.ConditionStalled)
	if c.Status != metav1.ConditionTrue || c.Reason != stsv1alpha1.ReasonNotLoaded ||
		!strings.Contains(c.Message, `"users": not in Redis`) || !strings.Contains(c.Message, stsv1alpha1.AnnotationRestartedAt) {
		t.Errorf("Stalled = %s/%s %q, want NotLoaded saying the list is gone from Redis and how to load it again", c.Status, c.Reason, c.Message)
	}
}

// TestAListRedisLostIsNotPushedAgain: under the Reload policy, a dataset's list that Redis lost
// (FLUSHALL, as a restart without persistence does) is reported, and not pushed again over
// several polls: a LOAD would hand out again the lines consumed before the loss.
func TestAListRedisLostIsNotPushedAgain(t *testing.T) {
	s := requireEnvtest(t)
	rs := redistest.Start(t)
	const v1 = "u1\nu2\nu3\n"
	ts := startTableServerOn(t, redisStore(t, rs), "", nil)
	ts.loadDataset(t, "users", v1) // what the pod's startup load did
	tableServer := s.servedOnRedis(t, rs, ts, v1, specstest.WithPolicy(stsv1alpha1.DatasetUpdateReload))
	if _, err := rs.Do("FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	s.waitForMessage(t, tableServer, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonNotLoaded, "not in Redis", reconcileWait)
	ts.waitPolls(t, 3)
	if n := ts.loads.Load(); n != 1 {
		t.Errorf("%d LOAD calls, want the startup's only: the lost list was pushed again", n)
	}
	if n := ts.length("users"); n != -1 {
		t.Errorf("users has %d lines in Redis, want none: the lost list was loaded again", n)
	}
}
