package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
	stsserver "github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// observed builds an observation for computeStatus tests.
type observed func(*observation)

func observe(opts ...observed) observation {
	o := observation{sources: &sources{hashes: map[string]string{}, content: map[string][]byte{}}}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func sourceMissing(what string) observed {
	return func(o *observation) { o.sources.missing = append(o.sources.missing, what) }
}

func specProblem(what string) observed {
	return func(o *observation) { o.problems = append(o.problems, what) }
}

// rollout is the state the Deployment controller reports for a Deployment.
type rollout int

const (
	notObserved    rollout = iota // the controller has not seen the current generation
	podStarting                   // the pod of the current spec exists, not available yet
	rolledOutNow                  // the one pod of the current spec is available
	deadlinePast                  // the rollout exceeded its progress deadline
	oneOfThreeDown                // three replicas of the current spec, two of them available
	threeUnready                  // three replicas of the current spec, none available
	rollingThree                  // three replicas: one new pod started, three old ones serve
)

// deployed: a Deployment at generation 2 exists that loaded the given dataset hashes, in the
// given rollout state.
func deployed(state rollout, loaded map[string]string) observed {
	return func(o *observation) {
		d := &appsv1.Deployment{}
		d.Generation = 2
		d.Annotations = map[string]string{loadedDatasetsAnnotation: encodeHashes(loaded)}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: specs.ContainerName, Image: "sts:1"}}
		switch state {
		case notObserved:
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		case podStarting:
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1}
		case rolledOutNow:
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		case rollingThree:
			d.Spec.Replicas = ptr.To[int32](3)
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 4, UpdatedReplicas: 1, AvailableReplicas: 3}
		case oneOfThreeDown, threeUnready:
			d.Spec.Replicas = ptr.To[int32](3)
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}
			if state == threeUnready {
				d.Status.AvailableReplicas = 0
			}
		case deadlinePast:
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
				Message: `ReplicaSet "a-1" has timed out progressing.`,
			}}}
		}
		o.deployment = d
	}
}

func sourceHash(dataset, hash string) observed {
	return func(o *observation) { o.sources.hashes[dataset] = hash }
}

func answered(lists ...protocol.List) observed {
	return func(o *observation) {
		s := &protocol.Answer{OK: true, Lists: lists, Total: new(int64)}
		for _, l := range lists {
			*s.Total += l.Length
		}
		o.server.status = s
	}
}

func noAnswer(o *observation) { o.server.err = errors.New("connection refused") }

// backendDown: a pod reports that it cannot reach Redis.
func backendDown(o *observation) {
	o.server.backendErr = &refusedError{command: "STATUS", httpStatus: 503, reason: protocol.ReasonBackendUnavailable, message: "redis: connection refused"}
}

func applyFailed(err error) observed { return func(o *observation) { o.applyErr = err } }

func reloadFailed(err error) observed { return func(o *observation) { o.server.reloadErr = err } }

// conditionTypesInOrder are the columns of TestComputeStatusConditions.
var conditionTypesInOrder = [5]string{
	stsv1alpha1.ConditionReady, stsv1alpha1.ConditionReconciling, stsv1alpha1.ConditionStalled,
	stsv1alpha1.ConditionDatasetsLoaded, stsv1alpha1.ConditionDatasetsInSync,
}

func TestComputeStatusConditions(t *testing.T) {
	users := protocol.List{Name: "users", Length: 5}
	loadedUsers := map[string]string{"users": "h1"}
	const newHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" // a SHA-256 the server reports
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "a", nil)
	// want: Ready, Reconciling, Stalled, DatasetsLoaded, DatasetsInSync as "Status/Reason", and
	// what kstatus (Flux, kpt, cli-utils) computes from the whole status.
	tests := map[string]struct {
		policy      stsv1alpha1.DatasetUpdatePolicy
		opts        []specstest.Option
		obs         observation
		want        [5]string
		wantKstatus kstatus.Status
	}{
		"source missing, nothing deployed": {
			obs:         observe(sourceMissing(`ConfigMap "logins"`)),
			want:        [5]string{"False/SourceMissing", "False/SourceMissing", "True/SourceMissing", "False/SourceMissing", "False/SourceMissing"},
			wantKstatus: kstatus.FailedStatus,
		},
		"charset the server does not know": {
			obs:         observe(specProblem("spec.server.charsets.read: unknown charset"), sourceHash("users", "h1")),
			want:        [5]string{"False/InvalidSpec", "False/InvalidSpec", "True/InvalidSpec", "False/InvalidSpec", "Unknown/InvalidSpec"},
			wantKstatus: kstatus.FailedStatus,
		},
		"a name taken by another owner": {
			obs:         observe(applyFailed(&notOwnedError{`Service "a" exists`})),
			want:        [5]string{"False/ApplyFailed", "False/ApplyFailed", "True/ApplyFailed", "False/ApplyFailed", "Unknown/ApplyFailed"},
			wantKstatus: kstatus.FailedStatus,
		},
		"an invalid Deployment": {
			obs:         observe(applyFailed(invalid)),
			want:        [5]string{"False/ApplyFailed", "False/ApplyFailed", "True/ApplyFailed", "False/ApplyFailed", "Unknown/ApplyFailed"},
			wantKstatus: kstatus.FailedStatus,
		},
		"an API server timeout": {
			obs:         observe(applyFailed(apierrors.NewTimeoutError("slow", 1))),
			want:        [5]string{"False/ApplyFailed", "True/ApplyFailed", "False/ApplyFailed", "False/ApplyFailed", "Unknown/ApplyFailed"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"new spec not yet seen by the Deployment controller": {
			obs:         observe(sourceHash("users", "h1"), deployed(notObserved, loadedUsers), answered(users)),
			want:        [5]string{"False/RollingOut", "True/RollingOut", "False/RollingOut", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"pod starting": {
			obs:         observe(sourceHash("users", "h1"), deployed(podStarting, loadedUsers), noAnswer),
			want:        [5]string{"False/WaitingForPod", "True/WaitingForPod", "False/WaitingForPod", "Unknown/WaitingForPod", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"rollout past its deadline": {
			obs:         observe(sourceHash("users", "h1"), deployed(deadlinePast, loadedUsers), noAnswer),
			want:        [5]string{"False/RolloutStuck", "False/RolloutStuck", "True/RolloutStuck", "Unknown/RolloutStuck", "True/InSync"},
			wantKstatus: kstatus.FailedStatus,
		},
		"available but unreachable": {
			obs:         observe(sourceHash("users", "h1"), deployed(rolledOutNow, loadedUsers), noAnswer),
			want:        [5]string{"False/Unreachable", "True/Unreachable", "False/Unreachable", "Unknown/Unreachable", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"serving every dataset": {
			obs:         observe(sourceHash("users", "h1"), deployed(rolledOutNow, loadedUsers), answered(users)),
			want:        [5]string{"True/Serving", "False/Reconciled", "False/Reconciled", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.CurrentStatus,
		},
		"serving, a source changed since loading (Keep): drift, still healthy": {
			obs:         observe(sourceHash("users", "h2"), deployed(rolledOutNow, loadedUsers), answered(users)),
			want:        [5]string{"True/Serving", "False/Reconciled", "False/Reconciled", "True/Loaded", "False/SourceChanged"},
			wantKstatus: kstatus.CurrentStatus,
		},
		"a source changed, and the server says it loaded the new content (a restart): in sync": {
			obs: observe(sourceHash("users", newHash[:specs.HashLength]), deployed(rolledOutNow, loadedUsers),
				answered(protocol.List{Name: "users", Length: 5, LoadedSHA256: newHash})),
			want:        [5]string{"True/Serving", "False/Reconciled", "False/Reconciled", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.CurrentStatus,
		},
		"the record says the source is loaded, the server says it holds other content: drift": {
			obs: observe(sourceHash("users", "h1"), deployed(rolledOutNow, loadedUsers),
				answered(protocol.List{Name: "users", Length: 5, LoadedSHA256: newHash})),
			want:        [5]string{"True/Serving", "False/Reconciled", "False/Reconciled", "True/Loaded", "False/SourceChanged"},
			wantKstatus: kstatus.CurrentStatus,
		},
		"serving without a dataset's list": {
			obs:         observe(sourceHash("users", "h1"), deployed(rolledOutNow, loadedUsers), answered(protocol.List{Name: "other", Length: 1})),
			want:        [5]string{"False/NotLoaded", "False/NotLoaded", "True/NotLoaded", "False/NotLoaded", "True/InSync"},
			wantKstatus: kstatus.FailedStatus,
		},
		"serving, reload refused by the server": {
			policy: stsv1alpha1.DatasetUpdateReload,
			obs: observe(sourceHash("users", "h2"), deployed(rolledOutNow, loadedUsers), answered(users),
				reloadFailed(&refusedError{command: "LOAD", httpStatus: 413, message: "too large"})),
			want:        [5]string{"True/Serving", "False/ReloadFailed", "True/ReloadFailed", "True/Loaded", "False/ReloadFailed"},
			wantKstatus: kstatus.FailedStatus,
		},
		"serving, reload failed on the server's side": {
			policy: stsv1alpha1.DatasetUpdateReload,
			obs: observe(sourceHash("users", "h2"), deployed(rolledOutNow, loadedUsers), answered(users),
				reloadFailed(&refusedError{command: "LOAD", httpStatus: 500, message: "no space left on device"})),
			want:        [5]string{"True/Serving", "True/ReloadFailed", "False/ReloadFailed", "True/Loaded", "False/ReloadFailed"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"serving, reload timed out": {
			policy: stsv1alpha1.DatasetUpdateReload,
			obs: observe(sourceHash("users", "h2"), deployed(rolledOutNow, loadedUsers), answered(users),
				reloadFailed(errors.New("LOAD: context deadline exceeded"))),
			want:        [5]string{"True/Serving", "True/ReloadFailed", "False/ReloadFailed", "True/Loaded", "False/ReloadFailed"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"memory: rolling out, nothing serves": {
			obs:         observe(sourceHash("users", "h1"), deployed(rollingThree, loadedUsers), answered(users)),
			want:        [5]string{"False/RollingOut", "True/RollingOut", "False/RollingOut", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"Redis: rolling out, the old pods serve": {
			opts:        []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 3)},
			obs:         observe(sourceHash("users", "h1"), deployed(rollingThree, loadedUsers), answered(users)),
			want:        [5]string{"True/Serving", "True/RollingOut", "False/RollingOut", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"Redis: a new spec the Deployment controller has not seen yet, the pods serve": {
			opts:        []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 3)},
			obs:         observe(sourceHash("users", "h1"), deployed(notObserved, loadedUsers), answered(users)),
			want:        [5]string{"True/Serving", "True/RollingOut", "False/RollingOut", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"several replicas, one of them not available": {
			obs:         observe(sourceHash("users", "h1"), deployed(oneOfThreeDown, loadedUsers), answered(users)),
			want:        [5]string{"True/Serving", "True/WaitingForPod", "False/WaitingForPod", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"Redis unreachable: no pod ready, one says why": {
			obs:         observe(sourceHash("users", "h1"), deployed(threeUnready, loadedUsers), noAnswer, backendDown),
			want:        [5]string{"False/BackendUnavailable", "True/BackendUnavailable", "False/BackendUnavailable", "Unknown/BackendUnavailable", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"Redis unreachable from one pod, the others serve": {
			obs:         observe(sourceHash("users", "h1"), deployed(oneOfThreeDown, loadedUsers), answered(users), backendDown),
			want:        [5]string{"True/Serving", "True/BackendUnavailable", "False/BackendUnavailable", "True/Loaded", "True/InSync"},
			wantKstatus: kstatus.InProgressStatus,
		},
		"serving, source deleted later": {
			obs:         observe(sourceMissing(`ConfigMap "logins"`), deployed(rolledOutNow, loadedUsers), answered(users)),
			want:        [5]string{"True/Serving", "False/SourceMissing", "True/SourceMissing", "True/Loaded", "False/SourceMissing"},
			wantKstatus: kstatus.FailedStatus,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tableServer := specstest.New("a", append([]specstest.Option{specstest.WithConfigMapDataset("users", "logins", "users"), specstest.WithClaimDataset("csvs", "d", "dir", ".*"), specstest.WithPolicy(tc.policy)}, tc.opts...)...)
			tableServer.Generation = 3
			tableServer.Status = computeStatus(tableServer, tc.obs, metav1.Now())
			for i, typ := range conditionTypesInOrder {
				c := meta.FindStatusCondition(tableServer.Status.Conditions, typ)
				if c == nil {
					t.Fatalf("no %s condition", typ)
				}
				if got := string(c.Status) + "/" + c.Reason; got != tc.want[i] {
					t.Errorf("%s = %s (%s), want %s", typ, got, c.Message, tc.want[i])
				}
				if c.ObservedGeneration != 3 || c.Message == "" {
					t.Errorf("%s: observedGeneration %d, message %q", typ, c.ObservedGeneration, c.Message)
				}
			}
			if st := tableServer.Status; st.ObservedGeneration != 3 || st.Endpoint != "http://a.default.svc:9191" || st.UIPath != "/ui/" {
				t.Errorf("observedGeneration %d endpoint %q uiPath %q", st.ObservedGeneration, st.Endpoint, st.UIPath)
			}
			if res := computeKstatus(t, tableServer); res.Status != tc.wantKstatus {
				t.Errorf("kstatus = %s (%s), want %s", res.Status, res.Message, tc.wantKstatus)
			}
		})
	}
}

// computeKstatus runs kstatus's own computation (sigs.k8s.io/cli-utils; Flux's fork has the
// same package) on tableServer as the API server would serve it.
func computeKstatus(t testing.TB, tableServer *stsv1alpha1.SimpleTableServer) *kstatus.Result {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tableServer)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(stsv1alpha1.GroupVersion.WithKind("SimpleTableServer"))
	res, err := kstatus.Compute(u)
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return res
}

// TestStatusListsStayWithinTheSchema: a list whose name is longer than status.lists[].name may
// be is counted but not listed, since one such name would make the API server refuse the
// whole status write.
func TestStatusListsStayWithinTheSchema(t *testing.T) {
	long := protocol.List{Name: strings.Repeat("x", maxStatusNameBytes+1), Length: 2}
	st := computeStatus(specstest.New("a"), observe(deployed(rolledOutNow, nil), answered(protocol.List{Name: "users", Length: 5}, long)), metav1.Now())
	if len(st.Lists) != 1 || st.Lists[0].Name != "users" || st.ListCount != 2 || st.TotalLines != 7 {
		t.Errorf("lists %+v, count %d, total %d: want users listed, both counted", st.Lists, st.ListCount, st.TotalLines)
	}
}

func TestComputeStatusDropsConditionsItNoLongerWrites(t *testing.T) {
	tableServer := specstest.New("a")
	tableServer.Status.Conditions = []metav1.Condition{
		{Type: "Degraded", Status: metav1.ConditionTrue, Reason: "Unreachable"},
		{Type: "Progressing", Status: metav1.ConditionFalse, Reason: "Deployed"},
	}
	st := computeStatus(tableServer, observe(deployed(rolledOutNow, nil), answered()), metav1.Now())
	var types []string
	for _, c := range st.Conditions {
		types = append(types, c.Type)
	}
	if !reflect.DeepEqual(types, conditionTypesInOrder[:]) {
		t.Errorf("condition types %q, want %q", types, conditionTypesInOrder)
	}
	if st.Image != "sts:1" {
		t.Errorf("status.image = %q, want the Deployment's", st.Image)
	}
}

func TestLoadedAfterRestart(t *testing.T) {
	before := map[string]string{"users": "h1", "gone": "h9"}
	now := map[string]string{"users": "h2", "cards": "h3"}
	tests := map[string]struct {
		durable bool
		want    map[string]string
	}{
		// The new pod loads every source as it is now.
		"in memory": {false, map[string]string{"users": "h2", "cards": "h3"}},
		// The new pod restores users from its journal; only cards is loaded from its source.
		"durable": {true, map[string]string{"users": "h1", "cards": "h3"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := loadedAfterRestart(tc.durable, before, now); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("record %v, want %v", got, tc.want)
			}
		})
	}
}

func TestComputeStatusChangesOnlyWithTheServer(t *testing.T) {
	tableServer := specstest.New("a", specstest.WithConfigMapDataset("users", "logins", "users"))
	obs := observe(sourceHash("users", "h"), deployed(rolledOutNow, map[string]string{"users": "h"}),
		answered(protocol.List{Name: "users", Length: 5}))
	t0 := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	tableServer.Status = computeStatus(tableServer, obs, t0)
	if tableServer.Status.TotalLines != 5 || tableServer.Status.ListCount != 1 || !tableServer.Status.LastStatusTime.Equal(&t0) {
		t.Fatalf("first reading: %+v", tableServer.Status)
	}

	later := metav1.NewTime(t0.Add(time.Minute))
	same := computeStatus(tableServer, obs, later)
	if !apiequality.Semantic.DeepEqual(tableServer.Status, same) {
		t.Errorf("an identical reading changed the status:\n%+v\n%+v", tableServer.Status, same)
	}

	read := observe(sourceHash("users", "h"), deployed(rolledOutNow, map[string]string{"users": "h"}),
		answered(protocol.List{Name: "users", Length: 4}))
	next := computeStatus(tableServer, read, later)
	if next.TotalLines != 4 || !next.LastStatusTime.Equal(&later) {
		t.Errorf("after a READ: total %d at %v", next.TotalLines, next.LastStatusTime)
	}
	if c := meta.FindStatusCondition(next.Conditions, stsv1alpha1.ConditionReady); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Ready's lastTransitionTime moved to %v without a transition", c.LastTransitionTime)
	}

	gone := computeStatus(tableServer, observe(sourceHash("users", "h"), deployed(rolledOutNow, nil), noAnswer), later)
	if gone.TotalLines != 5 || !gone.LastStatusTime.Equal(&t0) {
		t.Errorf("an unanswered poll dropped the last reading: %+v", gone)
	}
}

func TestStatusListsAreBounded(t *testing.T) {
	var lists []protocol.List
	for i := range maxStatusLists + 10 {
		lists = append(lists, protocol.List{Name: string(rune('a' + i%26)), Length: 1})
	}
	st := computeStatus(specstest.New("a"), observe(deployed(rolledOutNow, nil), answered(lists...)), metav1.Now())
	if len(st.Lists) != maxStatusLists || st.ListCount != int32(maxStatusLists+10) || st.TotalLines != int64(maxStatusLists+10) {
		t.Errorf("%d lists in status, listCount %d, total %d", len(st.Lists), st.ListCount, st.TotalLines)
	}
}

func TestNotLoadedSaysWhichDatasetsAndWhy(t *testing.T) {
	orders := stsv1alpha1.Dataset{Name: "orders", PersistentVolumeClaim: &stsv1alpha1.ClaimSource{ClaimName: "data", Path: "orders", Match: `.*\.csv`}}
	ordersDir := specs.DatasetPath(orders)
	tableServer := specstest.New("a", specstest.WithConfigMapDataset("users", "users", "lines"), specstest.WithConfigMapDataset("emails", "emails", "lines"),
		specstest.WithDataset(orders), specstest.WithClaimDataset("old", "data", "old.csv", ""), specstest.WithClaimDataset("single", "data", "orders/single.csv", ""))
	server := &protocol.Answer{
		OK:    true,
		Lists: []protocol.List{{Name: "emails", Length: 3}, {Name: "a.csv", Length: 1}},
		LoadFailures: []protocol.LoadFailure{
			{List: "users", Source: specs.DatasetPath(tableServer.Spec.Datasets[0]), Error: "file not found !"},
			{List: "big.csv", Source: ordersDir + "/big.csv", Error: "Limit exceeded: max-total-bytes=10 !"},
			{List: "", Source: ordersDir + "/sub=.*", Error: "not this dataset's directory"},
			{List: "notes.txt", Source: ordersDir + "/notes.txt", Error: "a file the pattern does not match"},
			{List: "a.csv", Source: ordersDir + "/a.csv", Error: "failed, then loaded from another source"},
			{List: "single", Source: ordersDir + "/single.csv", Error: "file not found !"},
		},
	}
	got := unloadedDatasets(tableServer, server)
	want := []string{
		`"users": file not found !`,
		`"orders" file big.csv: Limit exceeded: max-total-bytes=10 !`,
		`"old": no list (a server too old to say why; see its log)`,
		`"single": file not found !`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unloaded datasets:\n%q\nwant\n%q", got, want)
	}
	st := computeStatus(tableServer, observe(deployed(rolledOutNow, nil), func(o *observation) { o.server.status = server }), metav1.Now())
	c := meta.FindStatusCondition(st.Conditions, stsv1alpha1.ConditionDatasetsLoaded)
	if c == nil || c.Status != metav1.ConditionFalse || c.Message != "The table server could not load datasets: "+strings.Join(want, "; ") {
		t.Errorf("DatasetsLoaded: %+v", c)
	}

	var many []protocol.LoadFailure
	for i := range 2 * maxNotLoadedShown {
		many = append(many, protocol.LoadFailure{List: fmt.Sprintf("f%d.csv", i), Source: fmt.Sprintf("%s/f%d.csv", ordersDir, i), Error: "bad"})
	}
	msg := notLoadedMessage(unloadedDatasets(specstest.New("b", specstest.WithDataset(orders)), &protocol.Answer{OK: true, LoadFailures: many}))
	if !strings.HasSuffix(msg, fmt.Sprintf("f%d.csv: bad; and %d more", maxNotLoadedShown-1, maxNotLoadedShown)) {
		t.Errorf("a long list of failures is not cut: %s", msg)
	}
}

// The operator reads the failures from a real table server's STATUS.
func TestTableServerReportsFailedLoads(t *testing.T) {
	missing := t.TempDir() + "/users.csv"
	ts := startTableServer(t, "", nil, func(c *stsserver.Config) { c.Loads = []stsserver.Load{{List: "users", Path: missing}} })
	got, err := serverClient{http: NewHTTPClient(5 * time.Second), baseURL: ts.url}.status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []protocol.LoadFailure{{List: "users", Source: missing, Error: "file not found !"}}; !reflect.DeepEqual(got.LoadFailures, want) {
		t.Errorf("load failures %+v, want %+v", got.LoadFailures, want)
	}
}

// A transport error keeps the same text from one call to the next, so that a condition message
// made of it does not change (and write status, and record an event) at every poll.
func TestTransportErrorsDropTheLocalPort(t *testing.T) {
	reset := func(localPort int) error {
		return &url.Error{Op: "Get", URL: "http://tables.ns.svc:9191/sts/STATUS?FORMAT=JSON", Err: &net.OpError{
			Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: localPort},
			Addr: &net.TCPAddr{IP: net.IPv4(10, 96, 0, 5), Port: 9191}, Err: syscall.ECONNRESET,
		}}
	}
	first, second := withoutLocalAddress(reset(51234)).Error(), withoutLocalAddress(reset(40001)).Error()
	if first != second || first != "read tcp 10.96.0.5:9191: connection reset by peer" {
		t.Errorf("%q and %q", first, second)
	}
	if !errors.Is(withoutLocalAddress(reset(1)), syscall.ECONNRESET) {
		t.Error("the cause is lost")
	}
	other := errors.New("HTTP 502")
	if withoutLocalAddress(other) != other {
		t.Error("an error without a connection changed")
	}
}

// A Deployment generation bumped only by the record of a reload is not a rollout.
func TestReloadRecordIsNotARollout(t *testing.T) {
	for name, tc := range map[string]struct {
		generation, observed int64
		reloadedAt           string
		want                 bool
	}{
		"observed":                           {generation: 3, observed: 3, want: true},
		"bumped by the record":               {generation: 3, observed: 2, reloadedAt: "2", want: true},
		"bumped by two records in a row":     {generation: 4, observed: 2, reloadedAt: "2", want: true},
		"a spec the controller has not seen": {generation: 4, observed: 2, reloadedAt: "3", want: false},
		"no record":                          {generation: 3, observed: 2, want: false},
		"a damaged record":                   {generation: 3, observed: 2, reloadedAt: "x", want: false},
	} {
		d := &appsv1.Deployment{}
		d.Generation, d.Status.ObservedGeneration = tc.generation, tc.observed
		if tc.reloadedAt != "" {
			d.Annotations = map[string]string{reloadedAtGenerationAnnotation: tc.reloadedAt}
		}
		if got := observedCurrentSpec(d); got != tc.want {
			t.Errorf("%s: observedCurrentSpec = %v, want %v", name, got, tc.want)
		}
	}
}

// TestStatusListsShowLeases: each list's leased, returned and dead-lettered lines, as STATUS
// reports them, are in status.lists.
func TestStatusListsShowLeases(t *testing.T) {
	logins := protocol.List{Name: "logins", Length: 5, Leased: 3, Returned: 7, DeadLettered: 1}
	st := computeStatus(specstest.New("a"), observe(deployed(rolledOutNow, nil), answered(logins)), metav1.Now())
	want := []stsv1alpha1.ListStatus{{Name: "logins", Length: 5, Leased: 3, Returned: 7, DeadLettered: 1}}
	if !slices.Equal(st.Lists, want) {
		t.Errorf("lists %+v, want %+v", st.Lists, want)
	}
}
