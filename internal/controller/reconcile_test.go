package controller

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// TestEveryReconcilePathSaysWhereItStopped runs Reconcile once per return path and checks the
// conditions and events each leaves. It runs against controller-runtime's fake client, not the
// envtest API server, and only here: a table of paths needs each one's inputs set up exactly
// (a write refused, a conflict, a read failing at one object), synchronously, and one call of
// Reconcile to look at, with no manager reconciling the same resource meanwhile. What the fake
// does not do (generations, garbage collection, the Deployment controller) no row relies on;
// the envtest tests run the same paths against a real API server.
func TestEveryReconcilePathSaysWhereItStopped(t *testing.T) {
	const name = "tables"
	internal := apierrors.NewInternalError(errors.New("etcd is slow"))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "users", errors.New("RBAC: access denied"))
	// failGets fails the reads of the object named what with err, the resource's own if it is the name.
	failGets := func(what string, err error) func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == what {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		}
	}
	failDeploymentCreate := func(err error) func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
		return func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*appsv1.Deployment); ok {
				return err
			}
			return c.Create(ctx, obj, opts...)
		}
	}
	failStatus := func(err error) func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
		return func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return err
		}
	}
	withUsers := specstest.WithConfigMapDataset("users", "users", "lines")
	users := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "users"}, Data: map[string]string{"lines": "u1\n"}}
	ready := metav1.Condition{Type: stsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: stsv1alpha1.ReasonServing, Message: "serving"}
	serving := func(tableServer *stsv1alpha1.SimpleTableServer) {
		tableServer.Status.Conditions = []metav1.Condition{ready}
	}
	deleting := func(tableServer *stsv1alpha1.SimpleTableServer) {
		tableServer.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		tableServer.Finalizers = []string{metav1.FinalizerDeleteDependents}
	}
	onRedis := specstest.WithRedis(specstest.RedisAt("redis.redis.svc:6379"), 1)
	rolledOut := appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	noPod := appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1}
	pastDeadline := appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "timed out",
	}}}
	answers := protocol.Answer{OK: true, Command: "STATUS", Lists: []protocol.List{}, Total: ptr.To[int64](0)}
	noRedis := protocol.Answer{Command: "STATUS", Reason: protocol.ReasonBackendUnavailable, Error: "redis: connection refused"}

	tests := map[string]struct {
		opts []specstest.Option // nil with gone: no resource at all
		gone bool
		// objects exist besides the resource; running adds its Service and a Deployment with this
		// status, as the operator would have made them.
		objects []client.Object
		running *appsv1.DeploymentStatus
		funcs   interceptor.Funcs
		// server is the STATUS answer and its HTTP status; nil: nothing listens.
		server     *protocol.Answer
		serverCode int

		wantErr     bool
		wantRequeue bool
		// want is "Status/Reason" of Ready, Reconciling and Stalled; "" for a condition that is
		// absent, all "" for a status left unwritten.
		want       [3]string
		wantStall  string // part of Stalled's message, when it is True
		wantEvents []string
	}{
		// The fetch.
		"resource gone": {gone: true},
		"resource unreadable": {
			funcs:   interceptor.Funcs{Get: failGets(name, internal)},
			wantErr: true,
		},
		"resource being deleted": {opts: []specstest.Option{deleting}},

		// The sources.
		"source unreadable, retried": {
			opts: []specstest.Option{withUsers}, objects: []client.Object{users},
			funcs:      interceptor.Funcs{Get: failGets("users", internal)},
			wantErr:    true,
			want:       [3]string{"Unknown/SourceUnreadable", "True/SourceUnreadable", "False/SourceUnreadable"},
			wantEvents: []string{"Warning SourceUnreadable"},
		},
		"source read forbidden": {
			opts: []specstest.Option{withUsers}, objects: []client.Object{users},
			funcs:      interceptor.Funcs{Get: failGets("users", forbidden)},
			wantErr:    true,
			want:       [3]string{"Unknown/SourceUnreadable", "False/SourceUnreadable", "True/SourceUnreadable"},
			wantStall:  "grant the operator",
			wantEvents: []string{"Warning SourceUnreadable"},
		},
		"source unreadable while serving: Ready keeps what it knew": {
			opts: []specstest.Option{withUsers, serving}, objects: []client.Object{users},
			funcs:      interceptor.Funcs{Get: failGets("users", internal)},
			wantErr:    true,
			want:       [3]string{"True/Serving", "True/SourceUnreadable", "False/SourceUnreadable"},
			wantEvents: []string{"Warning SourceUnreadable"},
		},
		"source unreadable, and so is the status write": {
			opts: []specstest.Option{withUsers}, objects: []client.Object{users},
			funcs:   interceptor.Funcs{Get: failGets("users", internal), SubResourcePatch: failStatus(internal)},
			wantErr: true,
		},

		// What stalls before a pod runs.
		"invalid spec": {
			opts:        []specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{Charsets: stsv1alpha1.Charsets{Read: "UTF 8"}})},
			wantRequeue: true,
			want:        [3]string{"False/InvalidSpec", "False/InvalidSpec", "True/InvalidSpec"},
			wantStall:   "spec.server.charsets.read",
			wantEvents:  []string{"Normal Created", "Warning InvalidSpec"},
		},
		"missing ConfigMap": {
			opts:        []specstest.Option{withUsers},
			wantRequeue: true,
			want:        [3]string{"False/SourceMissing", "False/SourceMissing", "True/SourceMissing"},
			wantStall:   `ConfigMap "users"`,
			wantEvents:  []string{"Normal Created", "Warning SourceMissing"},
		},
		"missing Secret": {
			opts:        []specstest.Option{specstest.WithSecretDataset("cards", "payment", "cards.csv")},
			wantRequeue: true,
			want:        [3]string{"False/SourceMissing", "False/SourceMissing", "True/SourceMissing"},
			wantStall:   `Secret "payment"`,
			wantEvents:  []string{"Normal Created", "Warning SourceMissing"},
		},
		"missing Redis credentials Secret": {
			opts: []specstest.Option{specstest.WithRedis(&stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{
				Address: "redis.redis.svc:6379", CredentialsSecret: &stsv1alpha1.RedisCredentials{Name: "redis"},
			}}, 1)},
			wantRequeue: true,
			want:        [3]string{"False/SourceMissing", "False/SourceMissing", "True/SourceMissing"},
			wantStall:   `Secret "redis" (backend.redis.credentialsSecret)`,
			wantEvents:  []string{"Normal Created", "Warning SourceMissing"},
		},

		// Applying the objects.
		"Deployment create fails, retried": {
			funcs:      interceptor.Funcs{Create: failDeploymentCreate(internal)},
			wantErr:    true,
			want:       [3]string{"False/ApplyFailed", "True/ApplyFailed", "False/ApplyFailed"},
			wantEvents: []string{"Normal Created"},
		},
		"Deployment create forbidden": {
			funcs:       interceptor.Funcs{Create: failDeploymentCreate(apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, name, errors.New("quota")))},
			wantRequeue: true,
			want:        [3]string{"False/ApplyFailed", "False/ApplyFailed", "True/ApplyFailed"},
			wantStall:   "quota",
			wantEvents:  []string{"Normal Created", "Warning ApplyFailed"},
		},
		"the name taken by another owner's Service": {
			objects:     []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}},
			wantRequeue: true,
			want:        [3]string{"False/ApplyFailed", "False/ApplyFailed", "True/ApplyFailed"},
			wantStall:   "not owned by this SimpleTableServer",
			wantEvents:  []string{"Warning ApplyFailed"},
		},
		"a write conflicts with the cache's view: retried at once, nothing written": {
			objects: []client.Object{staleService(name)},
			funcs: interceptor.Funcs{Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				return apierrors.NewConflict(schema.GroupResource{Resource: "services"}, name, errors.New("the object has been modified"))
			}},
			wantErr: true,
		},

		// The rollout and the server.
		"Deployment created, rolling out": {
			wantRequeue: true,
			want:        [3]string{"False/RollingOut", "True/RollingOut", "False/RollingOut"},
			wantEvents:  []string{"Normal Created", "Normal Created"},
		},
		"waiting for the pod": {
			running:     &noPod,
			wantRequeue: true,
			want:        [3]string{"False/WaitingForPod", "True/WaitingForPod", "False/WaitingForPod"},
		},
		"rollout past its deadline": {
			running:     &pastDeadline,
			wantRequeue: true,
			want:        [3]string{"False/RolloutStuck", "False/RolloutStuck", "True/RolloutStuck"},
			wantStall:   "timed out",
			wantEvents:  []string{"Warning RolloutStuck"},
		},
		"pod available, the server does not answer": {
			running:     &rolledOut,
			wantRequeue: true,
			want:        [3]string{"False/Unreachable", "True/Unreachable", "False/Unreachable"},
			wantEvents:  []string{"Warning Unreachable"},
		},
		"rolled out and serving": {
			running: &rolledOut, server: &answers,
			wantRequeue: true,
			want:        [3]string{"True/Serving", "False/Reconciled", "False/Reconciled"},
		},
		"the table servers cannot reach Redis": {
			opts:    []specstest.Option{onRedis},
			running: &rolledOut, server: &noRedis, serverCode: http.StatusServiceUnavailable,
			wantRequeue: true,
			want:        [3]string{"False/BackendUnavailable", "True/BackendUnavailable", "False/BackendUnavailable"},
			wantEvents:  []string{"Warning BackendUnavailable"},
		},

		// Writing the status.
		"deleted while reconciling": {
			running: &rolledOut, server: &answers,
			funcs: interceptor.Funcs{SubResourcePatch: failStatus(apierrors.NewNotFound(stsv1alpha1.GroupVersion.WithResource("simpletableservers").GroupResource(), name))},
		},
		"the status write fails: retried, no event without its status": {
			running: &rolledOut,
			funcs:   interceptor.Funcs{SubResourcePatch: failStatus(internal)},
			wantErr: true,
		},
	}
	for title, tc := range tests {
		t.Run(title, func(t *testing.T) {
			tableServer := specstest.New(name, tc.opts...)
			var objects []client.Object
			if !tc.gone {
				objects = append(objects, tableServer)
			}
			objects = append(objects, tc.objects...)
			if tc.running != nil {
				d := specs.Deployment(tableServer, specstest.Image, nil)
				d.Status = *tc.running
				objects = append(objects, specs.Service(tableServer, specstest.Image), d)
			}
			stored := fake.NewClientBuilder().WithScheme(reconcileScheme(t)).WithObjects(objects...).
				WithStatusSubresource(&stsv1alpha1.SimpleTableServer{}).Build()
			c := interceptor.NewClient(stored, tc.funcs) // what the reconciler sees
			url := unreachableURL
			if tc.server != nil {
				url = answering(t, tc.serverCode, *tc.server)
			}
			recorder := events.NewFakeRecorder(16)
			r := &SimpleTableServerReconciler{
				Client: c, APIReader: c, Recorder: recorder, DefaultImage: specstest.Image,
				Endpoints: fixedEndpoint(url), HTTPClient: NewHTTPClient(2 * time.Second),
				sourceCache: newSourceCache(c, c), tokens: newAcceptedTokens(), readings: newReadings(),
			}

			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tableServer)})

			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want one: %t", err, tc.wantErr)
			}
			if requeued := res.RequeueAfter > 0; requeued != tc.wantRequeue {
				t.Errorf("result %+v, want a requeue after the refresh interval: %t", res, tc.wantRequeue)
			}
			got := &stsv1alpha1.SimpleTableServer{}
			if err := stored.Get(context.Background(), client.ObjectKeyFromObject(tableServer), got); err != nil && !tc.gone {
				t.Fatal(err)
			}
			for i, typ := range []string{stsv1alpha1.ConditionReady, stsv1alpha1.ConditionReconciling, stsv1alpha1.ConditionStalled} {
				have := ""
				cond := meta.FindStatusCondition(got.Status.Conditions, typ)
				if cond != nil {
					have = string(cond.Status) + "/" + cond.Reason
				}
				if have != tc.want[i] {
					t.Errorf("%s is %q, want %q", typ, have, tc.want[i])
				}
				if cond != nil && typ == stsv1alpha1.ConditionStalled && cond.Status == metav1.ConditionTrue && !strings.Contains(cond.Message, tc.wantStall) {
					t.Errorf("Stalled says %q, want it to name %q", cond.Message, tc.wantStall)
				}
			}
			close(recorder.Events)
			var recorded []string
			for e := range recorder.Events {
				eventType, reason, _ := strings.Cut(e, " ")
				reason, _, _ = strings.Cut(reason, " ")
				recorded = append(recorded, eventType+" "+reason)
			}
			if !slices.Equal(recorded, tc.wantEvents) {
				t.Errorf("events %q, want %q", recorded, tc.wantEvents)
			}
		})
	}
}

// reconcileScheme knows the built-in kinds and SimpleTableServers.
func reconcileScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := stsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// staleService is the Service of the resource name built from an older spec: the operator updates it.
func staleService(name string) *corev1.Service {
	svc := specs.Service(specstest.New(name), specstest.Image)
	svc.Annotations[specs.SpecHashAnnotation] = "stale"
	return svc
}

// answering starts a server that answers every request with answer and HTTP code (0: 200).
func answering(t *testing.T, code int, answer protocol.Answer) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if code != 0 {
			w.WriteHeader(code)
		}
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fixedEndpoint reaches every table server, and every pod, at one URL.
type fixedEndpoint string

func (e fixedEndpoint) BaseURL(*stsv1alpha1.SimpleTableServer) string { return string(e) }
func (e fixedEndpoint) PodURL(*corev1.Pod) string                     { return string(e) }
