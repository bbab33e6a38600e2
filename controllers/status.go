package controllers

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// maxStatusLists bounds status.lists: clients can create any number of lists.
const maxStatusLists = 256

// observation is everything one reconcile learned, from which the status follows.
type observation struct {
	sources    *sources
	deployment *appsv1.Deployment // nil until it exists
	applyErr   error
	server     serverObservation
}

// updateStatus writes the status that obs implies, and the events of the conditions that
// changed, only when it differs from the stored one.
func (r *SimpleTableServerReconciler) updateStatus(ctx context.Context, sts *stsv1alpha1.SimpleTableServer, obs observation) error {
	status := computeStatus(sts, obs, metav1.Now())
	if apiequality.Semantic.DeepEqual(sts.Status, status) {
		return nil
	}
	r.recordTransitions(sts, status)
	patch := client.MergeFrom(sts.DeepCopy())
	sts.Status = status
	return r.Status().Patch(ctx, sts, patch)
}

// computeStatus returns sts's status given obs. The lists and lastStatusTime change only when
// the server reports different lists, so a steady server causes no status writes.
func computeStatus(sts *stsv1alpha1.SimpleTableServer, obs observation, now metav1.Time) stsv1alpha1.SimpleTableServerStatus {
	status := *sts.Status.DeepCopy()
	status.ObservedGeneration = sts.Generation
	status.Endpoint = Endpoint(sts)
	if s := obs.server.status; s != nil {
		setLists(&status, s, now)
	}
	ready := readyCondition(sts, obs)
	loaded := datasetsLoadedCondition(sts, obs, ready)
	for _, c := range []metav1.Condition{ready, loaded, progressingCondition(obs, ready), degradedCondition(ready, loaded)} {
		c.ObservedGeneration = sts.Generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&status.Conditions, c)
	}
	return status
}

func setLists(status *stsv1alpha1.SimpleTableServerStatus, s *serverStatus, now metav1.Time) {
	lists := s.Lists
	if len(lists) > maxStatusLists {
		lists = lists[:maxStatusLists]
	}
	if len(lists) == 0 {
		lists = nil // as the stored status decodes an absent list
	}
	if apiequality.Semantic.DeepEqual(status.Lists, lists) && status.TotalLines == s.Total &&
		status.ListCount == int32(len(s.Lists)) && status.LastStatusTime != nil {
		return
	}
	status.Lists = lists
	status.ListCount = int32(len(s.Lists))
	status.TotalLines = s.Total
	status.LastStatusTime = &now
}

func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

// readyCondition is True when the server answers STATUS.
func readyCondition(sts *stsv1alpha1.SimpleTableServer, obs observation) metav1.Condition {
	const typ = stsv1alpha1.ConditionReady
	switch {
	case obs.applyErr != nil:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonApplyFailed, obs.applyErr.Error())
	case obs.deployment == nil:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonSourceMissing,
			"The server starts once every source exists: "+missingList(obs.sources))
	case obs.server.status != nil:
		return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonServing, "The table server answers at "+Endpoint(sts))
	case available(obs.deployment):
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonUnreachable,
			fmt.Sprintf("The Deployment is available but the table server does not answer: %v", obs.server.err))
	default:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonStarting, "Waiting for the table server's pod to start")
	}
}

// datasetsLoadedCondition is True when every dataset is a list in the server; its reason says
// whether the lists still match their sources.
func datasetsLoadedCondition(sts *stsv1alpha1.SimpleTableServer, obs observation, ready metav1.Condition) metav1.Condition {
	const typ = stsv1alpha1.ConditionDatasetsLoaded
	if len(obs.sources.missing) > 0 {
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonSourceMissing,
			"Not found: "+missingList(obs.sources)+"; create it or correct spec.datasets")
	}
	if obs.server.status == nil {
		return condition(typ, metav1.ConditionUnknown, ready.Reason, "The table server has not answered")
	}
	if obs.server.reloadErr != nil {
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonReloadFailed, obs.server.reloadErr.Error())
	}
	if absent := absentDatasets(sts, obs.server.status); len(absent) > 0 {
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonNotLoaded,
			fmt.Sprintf("The server has no list for datasets %q: see the table server's log", absent))
	}
	if changed := obs.sources.changedSince(loadedHashes(obs.deployment)); len(changed) > 0 {
		return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonSourceChanged, fmt.Sprintf(
			"The sources of datasets %q changed after the server loaded them; the running lists are kept "+
				"(datasetUpdatePolicy Keep): set datasetUpdatePolicy to Reload, or restart the pod, to load them", changed))
	}
	return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonLoaded, "Every dataset is loaded as its source holds it")
}

// absentDatasets are the datasets loaded under their own name that the server has no list for.
// A claim directory with a match pattern loads lists named after its files, which are not known
// in advance.
func absentDatasets(sts *stsv1alpha1.SimpleTableServer, s *serverStatus) []string {
	have := make(map[string]bool, len(s.Lists))
	for _, l := range s.Lists {
		have[l.Name] = true
	}
	var absent []string
	for _, ds := range sts.Spec.Datasets {
		if pvc := ds.PersistentVolumeClaim; (pvc == nil || pvc.Match == "") && !have[ds.Name] {
			absent = append(absent, ds.Name)
		}
	}
	return absent
}

// progressingCondition is True while the Deployment rolls out its pod.
func progressingCondition(obs observation, ready metav1.Condition) metav1.Condition {
	const typ = stsv1alpha1.ConditionProgressing
	d := obs.deployment
	switch {
	case d == nil:
		return condition(typ, metav1.ConditionFalse, ready.Reason, "No Deployment yet")
	case d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas >= 1 && available(d):
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonDeployed, "The Deployment's pod is available")
	default:
		return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonDeploying, "Waiting for the Deployment's pod")
	}
}

// degradedCondition is True when Ready or DatasetsLoaded report a fault a user must fix (not
// a server that is still starting).
func degradedCondition(ready, loaded metav1.Condition) metav1.Condition {
	const typ = stsv1alpha1.ConditionDegraded
	switch {
	case ready.Reason == stsv1alpha1.ReasonApplyFailed || ready.Reason == stsv1alpha1.ReasonUnreachable:
		return condition(typ, metav1.ConditionTrue, ready.Reason, ready.Message)
	case loaded.Status == metav1.ConditionFalse:
		return condition(typ, metav1.ConditionTrue, loaded.Reason, loaded.Message)
	default:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonHealthy, "Nothing needs attention")
	}
}

func available(d *appsv1.Deployment) bool { return d != nil && d.Status.AvailableReplicas >= 1 }

func missingList(src *sources) string { return strings.Join(src.missing, ", ") }

// recordTransitions records an event for each condition that newly reports something a user
// should notice. Events follow transitions only, so a lasting fault is not repeated.
func (r *SimpleTableServerReconciler) recordTransitions(sts *stsv1alpha1.SimpleTableServer, status stsv1alpha1.SimpleTableServerStatus) {
	notices := []struct {
		condition, reason, eventType string
	}{
		{stsv1alpha1.ConditionDatasetsLoaded, stsv1alpha1.ReasonSourceMissing, corev1.EventTypeWarning},
		{stsv1alpha1.ConditionDatasetsLoaded, stsv1alpha1.ReasonSourceChanged, corev1.EventTypeNormal},
		{stsv1alpha1.ConditionDatasetsLoaded, stsv1alpha1.ReasonReloadFailed, corev1.EventTypeWarning},
		{stsv1alpha1.ConditionReady, stsv1alpha1.ReasonUnreachable, corev1.EventTypeWarning},
		{stsv1alpha1.ConditionReady, stsv1alpha1.ReasonApplyFailed, corev1.EventTypeWarning},
	}
	for _, n := range notices {
		now := meta.FindStatusCondition(status.Conditions, n.condition)
		before := meta.FindStatusCondition(sts.Status.Conditions, n.condition)
		if now != nil && now.Reason == n.reason && (before == nil || before.Reason != n.reason || before.Message != now.Message) {
			r.Recorder.Eventf(sts, nil, n.eventType, n.reason, "Reconcile", "%s", now.Message)
		}
	}
}
