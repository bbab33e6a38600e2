package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// serverObservation is what the table server answered during one reconcile.
type serverObservation struct {
	// status is the server's STATUS; nil when it was not asked (no Deployment) or did not answer.
	status *serverStatus
	// err says why the server did not answer.
	err error
	// reloadErr says why a changed dataset could not be pushed into the server.
	reloadErr error
}

// reloadRefused says whether the server refused a changed dataset (a KO for the request, such
// as a limit exceeded), as opposed to not answering or failing on its side: only the user can
// fix a refusal.
func (o serverObservation) reloadRefused() bool {
	var refused *refusedError
	return errors.As(o.reloadErr, &refused) && refused.httpStatus < http.StatusInternalServerError
}

// observeServer reads the server's STATUS and, under the Reload policy, first pushes every
// ConfigMap or Secret dataset that changed since the server loaded it.
func (r *SimpleTableServerReconciler) observeServer(ctx context.Context, sts *stsv1alpha1.SimpleTableServer, d *appsv1.Deployment, src *sources) serverObservation {
	if d == nil {
		return serverObservation{}
	}
	key := client.ObjectKeyFromObject(sts)
	ts := tableServer{http: r.HTTPClient, baseURL: r.Endpoints.BaseURL(sts), token: src.authToken}
	var obs serverObservation
	obs.status, obs.err = ts.status(ctx)
	if previous, ok := r.tokens.get(key); ok && previous != ts.token && unauthorized(obs.err) {
		ts.token = previous // a rotated Secret the server's mounted copy does not have yet
		obs.status, obs.err = ts.status(ctx)
	}
	if obs.err == nil {
		r.tokens.set(key, ts.token)
	}
	if obs.err != nil || sts.Spec.DatasetUpdatePolicy != stsv1alpha1.DatasetUpdateReload {
		return obs
	}
	reloaded, err := r.reloadChanged(ctx, sts, d, src, ts, obs.status)
	obs.reloadErr = err
	if reloaded {
		obs.status, obs.err = ts.status(ctx)
	}
	return obs
}

// reloadChanged replaces the list of every dataset whose source changed since the server loaded
// it, and records the new hashes on the Deployment so that each change is pushed once. Other
// lists are untouched. It reports whether any list was replaced.
func (r *SimpleTableServerReconciler) reloadChanged(ctx context.Context, sts *stsv1alpha1.SimpleTableServer, d *appsv1.Deployment, src *sources, ts tableServer, status *serverStatus) (bool, error) {
	if len(src.changedSince(loadedBy(d, status))) == 0 {
		return false, nil
	}
	// The cache may not hold the record of this operator's previous reload yet, and a list
	// replaced twice would hand out again the lines consumed in between: decide, and record, on
	// the Deployment as the API server has it.
	live := &appsv1.Deployment{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(d), live); err != nil {
		return false, fmt.Errorf("reading Deployment %q before a reload: %w", d.Name, err)
	}
	d.Annotations = live.Annotations // for the status too, which must not report stale drift
	loaded := loadedBy(live, status)
	var errs []error
	var done []string
	for _, name := range src.changedSince(loaded) {
		if err := ts.replaceList(ctx, name, src.content[name]); err != nil {
			errs = append(errs, fmt.Errorf("dataset %q: %w", name, err))
			continue
		}
		loaded[name] = src.hashes[name]
		done = append(done, name)
	}
	if len(done) == 0 {
		return false, errors.Join(errs...)
	}
	// The patch bumps the Deployment's generation but changes no pod: rolledOut knows that bump
	// by reloadedAtGenerationAnnotation, and d keeps the generation and rollout status the
	// Deployment controller last reported.
	at := live.Generation
	if prev, ok := reloadedAt(live); ok && live.Status.ObservedGeneration < live.Generation {
		at = prev // the Deployment controller has not seen the previous record yet
	}
	recorded := live.DeepCopy()
	recorded.Annotations = merged(live.Annotations, map[string]string{
		loadedDatasetsAnnotation:       encodeHashes(loaded),
		reloadedAtGenerationAnnotation: strconv.FormatInt(at, 10),
	})
	if err := r.Patch(ctx, recorded, client.MergeFrom(live)); err != nil {
		// The lists are replaced; the next reconcile pushes the same content again.
		errs = append(errs, fmt.Errorf("while recording the reloaded datasets on Deployment %q: %w", d.Name, err))
	} else {
		d.Annotations = recorded.Annotations
	}
	r.Recorder.Eventf(sts, d, corev1.EventTypeNormal, "Reloaded", "Reload", "Reloaded changed datasets into the running server: %q", done)
	return true, errors.Join(errs...)
}
