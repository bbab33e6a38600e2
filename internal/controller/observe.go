package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// serverObservation is what the table server answered during one reconcile.
type serverObservation struct {
	// status is the server's STATUS; nil when it was not asked (no Deployment) or did not answer.
	status *protocol.Answer
	// err says why the server did not answer.
	err error
	// reloadErr says why a changed dataset could not be pushed into the server.
	reloadErr error
	// backendErr is a table-server pod's report that it cannot reach its Redis.
	backendErr error
	// via is how the server was called (with the token it took), for the calls after STATUS.
	via serverClient
}

// reloadRefused says whether the server refused a changed dataset (a KO for the request, such
// as a limit exceeded), as opposed to not answering or failing on its side: only the user can
// fix a refusal.
func (o serverObservation) reloadRefused() bool {
	var refused *refusedError
	return errors.As(o.reloadErr, &refused) && refused.httpStatus < http.StatusInternalServerError &&
		refused.httpStatus != http.StatusUnauthorized // a token rotating under the push: the next poll retries
}

// observeServer reads the server's STATUS and, under the Reload policy, first pushes every
// ConfigMap or Secret dataset that changed since the server loaded it (syncLoaded).
func (r *SimpleTableServerReconciler) observeServer(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, d *appsv1.Deployment, src *sources) serverObservation {
	if d == nil {
		return serverObservation{}
	}
	ts := serverClient{http: r.HTTPClient, baseURL: r.Endpoints.BaseURL(tableServer), token: src.authToken}
	var obs serverObservation
	obs.status, obs.err = ts.status(ctx)
	if previous, ok := r.tokens.previous(tableServer); ok && previous != ts.token && unauthorized(obs.err) {
		ts.token = previous // a rotated Secret the server's mounted copy does not have yet
		obs.status, obs.err = ts.status(ctx)
	}
	obs.via = ts
	if obs.err == nil && r.tokens.accepted(tableServer, ts.token, ts.token == src.authToken, time.Now()) && src.authToken != "" {
		r.Recorder.Eventf(tableServer, nil, corev1.EventTypeWarning, "TokenNotTaken", "Reconcile",
			"The table server still refuses the token of Secret %q %s after it changed, and takes the previous one: "+
				"clients with the new token are refused. A server image older than token rotation (spec.image) needs a restart "+
				"(annotation %s)", tableServer.Spec.Server.AuthTokenSecret.Name, tokenLag, stsv1alpha1.AnnotationRestartedAt)
	}
	if backendUnavailable(obs.err) {
		obs.backendErr = obs.err
	} else if specs.Shared(tableServer) && (obs.err != nil || d.Status.AvailableReplicas < specs.Replicas(tableServer)) {
		obs.backendErr = r.backendProblem(ctx, tableServer, ts)
	}
	if obs.backendErr != nil {
		obs.backendErr = fmt.Errorf("redis at %s: %w", redisTarget(tableServer), obs.backendErr)
	}
	if obs.err != nil || !rolledOut(d) {
		// During a rollout STATUS may come from the pod being replaced: neither push into it
		// nor take its word for the new pod's record.
		return obs
	}
	reloaded, err := r.syncLoaded(ctx, tableServer, d, src, ts, obs.status)
	var recordErr *recordError
	if errors.As(err, &recordErr) {
		// Not a failed reload, and nothing the user must do: the next poll records it again,
		// and meanwhile the server's digests keep a replaced list from being pushed twice.
		log.FromContext(ctx).Error(recordErr.err, "Could not record what the table server loaded; retrying at the next poll")
		err = recordErr.pushErr
	}
	obs.reloadErr = err
	if reloaded {
		obs.status, obs.err = ts.status(ctx)
	}
	return obs
}

// maxPodsAsked bounds the pods backendProblem asks, one call each within the HTTP client's
// timeout.
const maxPodsAsked = 3

// backendProblem asks tableServer's running pods directly whether they can reach Redis: a pod that
// cannot is not ready, so the Service, which routes to ready pods only, cannot say. It returns
// the first report (pods by name, so that a lasting fault keeps its message) of a pod that its
// backend is unavailable; nil when none says so.
func (r *SimpleTableServerReconciler) backendProblem(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, ts serverClient) error {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(tableServer.Namespace), client.MatchingLabels(specs.SelectorLabels(tableServer))); err != nil {
		log.FromContext(ctx).Error(err, "Could not list the table-server pods to ask them about their backend")
		return nil
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	asked := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.DeletionTimestamp != nil {
			continue
		}
		if asked++; asked > maxPodsAsked {
			break
		}
		direct := ts
		direct.baseURL = r.Endpoints.PodURL(pod)
		if _, err := direct.status(ctx); backendUnavailable(err) {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// syncLoaded keeps the Deployment's record of what the server loaded true to what the server
// says it loaded, and under the Reload policy first replaces the list of every dataset whose
// source changed since then (other lists untouched), so that each change is pushed once. The
// record is what the operator goes by where the server cannot say: a durable server's restored
// lists carry no digest, and a stale record would then push a dataset again after a restart,
// handing out its consumed lines again. It reports whether any list was replaced.
func (r *SimpleTableServerReconciler) syncLoaded(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, d *appsv1.Deployment, src *sources, ts serverClient, status *protocol.Answer) (bool, error) {
	reload := tableServer.Spec.DatasetUpdatePolicy == stsv1alpha1.DatasetUpdateReload
	loaded := src.loadedBy(d, status)
	if !src.recordStale(d, loaded) && (!reload || len(src.changedSince(loaded)) == 0) {
		return false, nil
	}
	// The cache may not hold the record of this operator's previous reload yet, and a list
	// replaced twice would hand out again the lines consumed in between: decide, and record, on
	// the Deployment as the API server has it.
	live := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
		return false, &recordError{err: fmt.Errorf("reading Deployment %q before recording what its server loaded: %w", d.Name, err)}
	}
	d.Annotations = live.Annotations // for the status too, which must not report stale drift
	loaded = src.loadedBy(live, status)
	var errs []error
	var done []string
	if reload {
		for _, name := range src.changedSince(loaded) {
			if err := ts.replaceList(ctx, name, src.content[name]); err != nil {
				errs = append(errs, fmt.Errorf("dataset %q: %w", name, err))
				continue
			}
			loaded[name] = src.hashes[name]
			done = append(done, name)
		}
	}
	if len(done) > 0 {
		r.Recorder.Eventf(tableServer, d, corev1.EventTypeNormal, "Reloaded", "Reload", "Reloaded changed datasets into the running server: %q", done)
	}
	pushErr := errors.Join(errs...)
	if record := encodeHashes(loaded); record != live.Annotations[loadedDatasetsAnnotation] {
		if err := r.recordLoaded(ctx, d, live, record); err != nil {
			return len(done) > 0, &recordError{fmt.Errorf("while recording the loaded datasets on Deployment %q: %w", d.Name, err), pushErr}
		}
	}
	return len(done) > 0, pushErr
}

// recordError is a record of what the server loaded that could not be written, with the errors
// of the pushes before it, if any.
type recordError struct{ err, pushErr error }

func (e *recordError) Error() string { return errors.Join(e.err, e.pushErr).Error() }

// recordLoaded writes record as the Deployment's loaded-datasets annotation, patching live, the
// Deployment as the API server has it, and gives d the new annotations. The patch bumps the
// Deployment's generation but changes no pod: rolledOut knows that bump by
// reloadedAtGenerationAnnotation, and d keeps the generation and rollout status the Deployment
// controller last reported.
func (r *SimpleTableServerReconciler) recordLoaded(ctx context.Context, d, live *appsv1.Deployment, record string) error {
	at := live.Generation
	if prev, ok := reloadedAt(live); ok && live.Status.ObservedGeneration < live.Generation {
		at = prev // the Deployment controller has not seen the previous record yet
	}
	recorded := live.DeepCopy()
	recorded.Annotations = specs.Merged(live.Annotations, map[string]string{
		loadedDatasetsAnnotation:       record,
		reloadedAtGenerationAnnotation: strconv.FormatInt(at, 10),
	})
	if err := r.Patch(ctx, recorded, client.MergeFrom(live)); err != nil {
		return err
	}
	d.Annotations = recorded.Annotations
	return nil
}
