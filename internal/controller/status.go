package controller

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// maxStatusLists and maxStatusNameBytes bound status.lists (the schema says the same): clients
// can create any number of lists, with names of any length.
const (
	maxStatusLists     = 256
	maxStatusNameBytes = 1024
)

// conditionTypes are the conditions the operator writes; computeStatus drops any other.
var conditionTypes = []string{
	stsv1alpha1.ConditionReady,
	stsv1alpha1.ConditionReconciling,
	stsv1alpha1.ConditionStalled,
	stsv1alpha1.ConditionDatasetsLoaded,
	stsv1alpha1.ConditionDatasetsInSync,
	stsv1alpha1.ConditionReset,
}

// observation is everything one reconcile learned, from which the status follows.
type observation struct {
	sources *sources
	// problems are what in the spec the table server would refuse (specProblems).
	problems   []string
	deployment *appsv1.Deployment // nil until it exists
	applyErr   error
	server     serverObservation
	// consumption is how the lists are consumed, against the previous poll.
	consumption consumption
	// reset is what this reconcile did for the reset-at annotation; nil: nothing.
	reset *resetResult
}

// blocked says whether the Deployment must be held back because its pod could not run the
// spec: a source is missing, or the server would refuse part of the spec.
func (o observation) blocked() bool { return len(o.sources.missing) > 0 || len(o.problems) > 0 }

// updateStatus writes the status that obs implies.
func (r *SimpleTableServerReconciler) updateStatus(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, obs observation) error {
	return r.writeStatus(ctx, tableServer, computeStatus(tableServer, obs, metav1.Now()))
}

// updateStatusUnreadable writes what is known when the sources could not be read: Reconciling
// (or Stalled, when the API server forbade the read) says why, and the other conditions keep what
// they said about the generation they name, since the objects and the server were not looked at.
// A resource that has no Ready yet (its first reconcile) gets Ready Unknown with the same reason,
// so that it too says where it stopped.
func (r *SimpleTableServerReconciler) updateStatusUnreadable(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, err error) error {
	status := *tableServer.Status.DeepCopy()
	p := progress{progressConverging, stsv1alpha1.ReasonSourceUnreadable, err.Error() + " (retrying)"}
	if apierrors.IsForbidden(err) {
		p = progress{progressStalled, stsv1alpha1.ReasonSourceUnreadable, err.Error() + ": grant the operator get/list/watch on configmaps and secrets"}
	}
	known := []metav1.Condition{
		condition(stsv1alpha1.ConditionReconciling, isTrue(p.state == progressConverging), p.reason, p.message),
		condition(stsv1alpha1.ConditionStalled, isTrue(p.state == progressStalled), p.reason, p.message),
	}
	if meta.FindStatusCondition(status.Conditions, stsv1alpha1.ConditionReady) == nil {
		known = append(known, condition(stsv1alpha1.ConditionReady, metav1.ConditionUnknown, p.reason, p.message))
	}
	setConditions(&status, tableServer.Generation, metav1.Now(), known...)
	return r.writeStatus(ctx, tableServer, status)
}

// writeStatus writes status only when it differs from the stored one, and once it is written,
// the events of the conditions that changed (a write that fails records none: the retry would
// record them again).
func (r *SimpleTableServerReconciler) writeStatus(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, status stsv1alpha1.SimpleTableServerStatus) error {
	if apiequality.Semantic.DeepEqual(tableServer.Status, status) {
		return nil
	}
	before := tableServer.DeepCopy()
	tableServer.Status = status
	if err := r.Status().Patch(ctx, tableServer, client.MergeFrom(before)); err != nil {
		return err
	}
	r.recordTransitions(before, status)
	return nil
}

// setConditions sets each of conditions in status, as describing generation, at now (kept where
// the condition says what it said).
func setConditions(status *stsv1alpha1.SimpleTableServerStatus, generation int64, now metav1.Time, conditions ...metav1.Condition) {
	for _, c := range conditions {
		c.ObservedGeneration = generation
		c.LastTransitionTime = now
		meta.SetStatusCondition(&status.Conditions, c)
	}
}

// computeStatus returns tableServer's status given obs. The lists and lastStatusTime change only when
// the server reports different lists, so a steady server causes no status writes.
func computeStatus(tableServer *stsv1alpha1.SimpleTableServer, obs observation, now metav1.Time) stsv1alpha1.SimpleTableServerStatus {
	status := *tableServer.Status.DeepCopy()
	status.ObservedGeneration = tableServer.Generation
	status.Endpoint = specs.Endpoint(tableServer)
	status.UIPath = protocol.UIPath
	status.Selector = labels.SelectorFromSet(specs.SelectorLabels(tableServer)).String()
	if d := obs.deployment; d != nil {
		status.Image = specs.RunningImage(d)
		status.Replicas = d.Status.Replicas
		status.AvailableReplicas = d.Status.AvailableReplicas
	}
	if s := obs.server.status; s != nil {
		setLists(&status, s, obs.consumption, now, refreshInterval(tableServer))
	}
	if obs.reset != nil {
		setReset(&status, tableServer.Generation, obs.reset, now)
	}
	p := assess(tableServer, obs)
	status.Conditions = slices.DeleteFunc(status.Conditions, func(c metav1.Condition) bool {
		return !slices.Contains(conditionTypes, c.Type)
	})
	setConditions(&status, tableServer.Generation, now,
		readyCondition(tableServer, obs, p),
		condition(stsv1alpha1.ConditionReconciling, isTrue(p.state == progressConverging), p.reason, p.message),
		condition(stsv1alpha1.ConditionStalled, isTrue(p.state == progressStalled), p.reason, p.message),
		datasetsLoadedCondition(tableServer, obs, p),
		datasetsInSyncCondition(tableServer, obs, p),
	)
	return status
}

// setLists sets the lists the server reports, with the consumption c measured of them.
func setLists(status *stsv1alpha1.SimpleTableServerStatus, s *protocol.Answer, c consumption, now metav1.Time, step time.Duration) {
	var lists []stsv1alpha1.ListStatus // nil when empty, as the stored status decodes an absent list
	for _, l := range shownLists(s) {
		rate, measured := c.rates[l.Name]
		lists = append(lists, withConsumption(stsv1alpha1.ListStatus{Name: l.Name, Length: l.Length,
			Leased: l.Leased, Returned: l.Returned, DeadLettered: l.DeadLettered},
			findList(status.Lists, l.Name), rate, measured, now.Time, step))
	}
	total := ptr.Deref(s.Total, 0)
	if apiequality.Semantic.DeepEqual(status.Lists, lists) && status.TotalLines == total &&
		status.ListCount == int32(len(s.Lists)) && status.LastStatusTime != nil {
		return
	}
	status.Lists = lists
	status.ListCount = int32(len(s.Lists))
	status.TotalLines = total
	status.LastStatusTime = &now
}

// shownLists are the lists of a STATUS that the resource's status shows: the first
// maxStatusLists whose names fit the schema (a longer one would fail the whole write).
func shownLists(s *protocol.Answer) []protocol.List {
	var shown []protocol.List
	for _, l := range s.Lists {
		if len(shown) == maxStatusLists {
			break
		}
		if len(l.Name) <= maxStatusNameBytes {
			shown = append(shown, l)
		}
	}
	return shown
}

// findList returns the list called name in lists, or nil.
func findList(lists []stsv1alpha1.ListStatus, name string) *stsv1alpha1.ListStatus {
	for i := range lists {
		if lists[i].Name == name {
			return &lists[i]
		}
	}
	return nil
}

func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

func isTrue(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

// progress is where a resource stands on the way to serving its spec. Its reason and message
// explain Reconciling and Stalled (whichever is True, and the other one too) and a False Ready.
type progress struct {
	state           progressState
	reason, message string
}

type progressState int

const (
	// progressDone: the server runs the current spec and serves every dataset.
	progressDone progressState = iota
	// progressConverging: the operator waits for something that happens without the user.
	progressConverging
	// progressStalled: progress needs the user.
	progressStalled
)

// assess finds the first thing that keeps tableServer from being done, checked in the order in which they
// block each other: what the user must fix before anything can run, then the rollout, then
// the server's answer.
func assess(tableServer *stsv1alpha1.SimpleTableServer, obs observation) progress {
	switch {
	case len(obs.problems) > 0:
		return progress{progressStalled, stsv1alpha1.ReasonInvalidSpec,
			"The table server cannot run this spec, so its pod is left as it is: " + strings.Join(obs.problems, "; ")}
	case obs.applyErr != nil && needsUser(obs.applyErr):
		return progress{progressStalled, stsv1alpha1.ReasonApplyFailed, obs.applyErr.Error()}
	case obs.applyErr != nil:
		return progress{progressConverging, stsv1alpha1.ReasonApplyFailed, obs.applyErr.Error() + " (retrying)"}
	case len(obs.sources.missing) > 0:
		return progress{progressStalled, stsv1alpha1.ReasonSourceMissing,
			"Not found: " + strings.Join(obs.sources.missing, ", ") + "; create it or correct the spec"}
	case obs.server.backendErr != nil:
		// Before the rollout: a new pod that cannot reach Redis never becomes ready.
		return progress{progressConverging, stsv1alpha1.ReasonBackendUnavailable,
			"The table servers cannot reach their Redis, so they do not serve; they do again as soon as it answers: " + obs.server.backendErr.Error()}
	}
	d := obs.deployment
	if message, stuck := rolloutStuck(d); stuck {
		return progress{progressStalled, stsv1alpha1.ReasonRolloutStuck, "The table server's pod did not become available: " + message}
	}
	switch {
	case !rolledOut(d):
		return progress{progressConverging, stsv1alpha1.ReasonRollingOut, "The Deployment is replacing its pod with one of the current spec"}
	case !available(d):
		return progress{progressConverging, stsv1alpha1.ReasonWaitingForPod, "Waiting for the table server's pod to become available"}
	case obs.server.status == nil:
		return progress{progressConverging, stsv1alpha1.ReasonUnreachable, fmt.Sprintf(
			"The pod is available but the table server does not answer (asked again every %v): %v", refreshInterval(tableServer), obs.server.err)}
	}
	if unloaded := unloadedDatasets(tableServer, obs.server.status); len(unloaded) > 0 {
		return progress{progressStalled, stsv1alpha1.ReasonNotLoaded, notLoadedMessage(unloaded)}
	}
	if err := obs.server.reloadErr; err != nil {
		state := progressConverging
		if obs.server.reloadRefused() {
			state = progressStalled
		}
		return progress{state, stsv1alpha1.ReasonReloadFailed, "Could not reload changed datasets; the running lists are unchanged: " + err.Error()}
	}
	if want := ptr.Deref(d.Spec.Replicas, 1); d.Status.AvailableReplicas < want {
		// The others serve: Ready stays True.
		return progress{progressConverging, stsv1alpha1.ReasonWaitingForPod, fmt.Sprintf(
			"%d of %d table-server pods are available", d.Status.AvailableReplicas, want)}
	}
	return progress{progressDone, stsv1alpha1.ReasonReconciled, "The table server runs the current spec"}
}

// redisTarget names the Redis tableServer's pods use, for messages.
func redisTarget(tableServer *stsv1alpha1.SimpleTableServer) string {
	r := tableServer.Spec.Backend.Redis
	switch {
	case r == nil:
		return "no address"
	case r.Sentinel != nil:
		return fmt.Sprintf("master %q of sentinels %s", r.Sentinel.MasterName, strings.Join(r.Sentinel.Addresses, ","))
	}
	return r.Address
}

// rolledOut says whether the Deployment controller has seen d's current spec and runs exactly
// its pods of it (the same rules kstatus applies to Deployments). A generation that only the
// record of a reload bumped is not a new spec: the server keeps running, Ready stays True.
func rolledOut(d *appsv1.Deployment) bool {
	if d == nil {
		return false
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return observedCurrentSpec(d) && s.UpdatedReplicas >= want && s.Replicas <= want
}

func observedCurrentSpec(d *appsv1.Deployment) bool {
	observed := d.Status.ObservedGeneration
	if observed >= d.Generation {
		return true
	}
	// Every bump since the first unseen reload record was a record: a new spec removes it.
	at, ok := reloadedAt(d)
	return ok && observed >= at
}

// reloadedAt reads reloadedAtGenerationAnnotation.
func reloadedAt(d *appsv1.Deployment) (int64, bool) {
	at, err := strconv.ParseInt(d.Annotations[reloadedAtGenerationAnnotation], 10, 64)
	return at, err == nil
}

func available(d *appsv1.Deployment) bool { return d != nil && d.Status.AvailableReplicas >= 1 }

// rolloutStuck reports the Deployment controller's verdict that d's current rollout exceeded
// its progress deadline (the pod crash-loops, cannot be scheduled, cannot pull its image).
func rolloutStuck(d *appsv1.Deployment) (string, bool) {
	if d == nil || !observedCurrentSpec(d) {
		return "", false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return c.Message, true
		}
	}
	return "", false
}

// readyCondition is True when the server answers with every dataset loaded, whatever else is
// stalled (a source deleted after loading, say): with the memory backend, its pod of the
// current spec; with Redis, any available pod, since a rolling update keeps the old pods
// serving the same lists until new ones are ready (Reconciling says it rolls).
func readyCondition(tableServer *stsv1alpha1.SimpleTableServer, obs observation, p progress) metav1.Condition {
	const typ = stsv1alpha1.ConditionReady
	d := obs.deployment
	current := rolledOut(d) || d != nil && specs.Shared(tableServer) // Redis: any available pod serves the lists, old or new
	if current && available(d) && obs.server.status != nil && len(unloadedDatasets(tableServer, obs.server.status)) == 0 {
		return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonServing,
			"The table server answers at "+specs.Endpoint(tableServer)+" with every dataset loaded")
	}
	return condition(typ, metav1.ConditionFalse, p.reason, p.message)
}

// datasetsLoadedCondition is True when the server has a list for every dataset.
func datasetsLoadedCondition(tableServer *stsv1alpha1.SimpleTableServer, obs observation, p progress) metav1.Condition {
	const typ = stsv1alpha1.ConditionDatasetsLoaded
	switch {
	case obs.server.status != nil:
		if unloaded := unloadedDatasets(tableServer, obs.server.status); len(unloaded) > 0 {
			return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonNotLoaded, notLoadedMessage(unloaded))
		}
		return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonLoaded, "The server has a list for every dataset")
	case obs.deployment == nil:
		return condition(typ, metav1.ConditionFalse, p.reason, "No table server runs: "+p.message)
	default:
		return condition(typ, metav1.ConditionUnknown, p.reason, "The table server has not answered")
	}
}

// datasetsInSyncCondition is True when every ConfigMap and Secret dataset is loaded as its
// source holds it now. A change under the Keep policy makes it False: drift, not a fault.
func datasetsInSyncCondition(tableServer *stsv1alpha1.SimpleTableServer, obs observation, p progress) metav1.Condition {
	const typ = stsv1alpha1.ConditionDatasetsInSync
	switch {
	case len(obs.sources.missing) > 0:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonSourceMissing, "Not found: "+strings.Join(obs.sources.missing, ", "))
	case obs.deployment == nil:
		return condition(typ, metav1.ConditionUnknown, p.reason, "No table server runs: "+p.message)
	case obs.server.reloadErr != nil:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonReloadFailed, obs.server.reloadErr.Error())
	}
	changed := obs.sources.changedSince(obs.sources.loadedBy(obs.deployment, obs.server.status))
	switch {
	case len(changed) == 0:
		return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonInSync, "Every ConfigMap and Secret dataset is loaded as its source holds it")
	case tableServer.Spec.DatasetUpdatePolicy == stsv1alpha1.DatasetUpdateReload:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonSourceChanged,
			fmt.Sprintf("The sources of datasets %q changed; they are reloaded into the running server once it answers", changed))
	default:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonSourceChanged, fmt.Sprintf(
			"The sources of datasets %q changed after the server loaded them; the running lists are kept "+
				"(datasetUpdatePolicy Keep): set datasetUpdatePolicy to Reload to load them into the running server", changed))
	}
}

// unloadedDatasets says which datasets the server failed to load, and why when it reported it
// (STATUS's loadFailures): a dataset loaded under its own name that has no list, or a claim
// directory with a match pattern that could not be listed or one of whose files failed. Lists
// are never deleted, so a missing list is a failed load.
func unloadedDatasets(tableServer *stsv1alpha1.SimpleTableServer, s *protocol.Answer) []string {
	have := make(map[string]bool, len(s.Lists))
	for _, l := range s.Lists {
		have[l.Name] = true
	}
	var unloaded []string
	for _, ds := range tableServer.Spec.Datasets {
		if src := ds.PersistentVolumeClaim; src != nil && src.Match != "" {
			for _, f := range s.LoadFailures {
				switch {
				case f.List == "" && f.Source == specs.DatasetPath(ds)+"="+src.Match:
					unloaded = append(unloaded, fmt.Sprintf("%q: %s", ds.Name, f.Error))
				case !have[f.List] && loadedFromDirectory(ds, f):
					unloaded = append(unloaded, fmt.Sprintf("%q file %s: %s", ds.Name, f.List, f.Error))
				}
			}
			continue
		}
		if have[ds.Name] {
			continue
		}
		why := "no list (a server too old to say why; see its log)"
		if specs.Shared(tableServer) {
			why = "not in Redis: it was loaded, then lost (a Redis without persistence restarted, an eviction, a FLUSHALL); " +
				"restart the table servers (annotation " + stsv1alpha1.AnnotationRestartedAt + ") to load it again, which serves its consumed lines again"
		}
		for _, f := range s.LoadFailures {
			if f.List == ds.Name {
				why = f.Error // the last load of the list is the one that counts
			}
		}
		unloaded = append(unloaded, fmt.Sprintf("%q: %s", ds.Name, why))
	}
	return unloaded
}

// loadedFromDirectory says whether the failed load f was one of ds, a claim directory with a
// match pattern: a file of its directory whose name the pattern matches, loaded under that name.
func loadedFromDirectory(ds stsv1alpha1.Dataset, f protocol.LoadFailure) bool {
	source := f.Source
	if f.List == "" || f.List != path.Base(source) || path.Dir(source) != specs.DatasetPath(ds) {
		return false
	}
	re, err := javaregex.Compile(ds.PersistentVolumeClaim.Match, patternCheckTimeout)
	if err != nil {
		return false
	}
	matched, err := re.Match(path.Base(source))
	return err == nil && matched
}

// maxNotLoadedShown bounds the failures a condition message lists, so that a directory of
// thousands of bad files cannot push the message past the API's limit.
const maxNotLoadedShown = 10

func notLoadedMessage(unloaded []string) string {
	shown := unloaded
	more := ""
	if len(shown) > maxNotLoadedShown {
		shown = shown[:maxNotLoadedShown]
		more = fmt.Sprintf("; and %d more", len(unloaded)-maxNotLoadedShown)
	}
	return "The table server could not load datasets: " + strings.Join(shown, "; ") + more
}

// noticeable says whether a condition reports something a user should hear of as an event,
// and the event's type: whatever stalls the resource, a server that stopped answering or
// refused a reload, drift under the Keep policy, and how a reset went (a reset that waits for
// the server is not news: Reconciling says why the server does not serve).
func noticeable(c metav1.Condition) (string, bool) {
	switch {
	case c.Type == stsv1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue:
		return corev1.EventTypeWarning, true
	case c.Type == stsv1alpha1.ConditionReconciling && c.Status == metav1.ConditionTrue &&
		(c.Reason == stsv1alpha1.ReasonUnreachable || c.Reason == stsv1alpha1.ReasonReloadFailed ||
			c.Reason == stsv1alpha1.ReasonBackendUnavailable || c.Reason == stsv1alpha1.ReasonSourceUnreadable):
		return corev1.EventTypeWarning, true
	case c.Type == stsv1alpha1.ConditionDatasetsInSync && c.Reason == stsv1alpha1.ReasonSourceChanged:
		return corev1.EventTypeNormal, true
	case c.Type == stsv1alpha1.ConditionReset && c.Status == metav1.ConditionTrue:
		return corev1.EventTypeNormal, true
	case c.Type == stsv1alpha1.ConditionReset && c.Status == metav1.ConditionFalse:
		return corev1.EventTypeWarning, true
	}
	return "", false
}

// recordTransitions records an event, with the condition's reason and message, for each
// noticeable condition that is new or says something new. Events follow transitions only, so
// a lasting fault is not repeated.
func (r *SimpleTableServerReconciler) recordTransitions(tableServer *stsv1alpha1.SimpleTableServer, status stsv1alpha1.SimpleTableServerStatus) {
	for _, now := range status.Conditions {
		eventType, ok := noticeable(now)
		if !ok {
			continue
		}
		before := meta.FindStatusCondition(tableServer.Status.Conditions, now.Type)
		if before == nil || before.Status != now.Status || before.Reason != now.Reason || before.Message != now.Message {
			r.Recorder.Eventf(tableServer, nil, eventType, now.Reason, "Reconcile", "%s", now.Message)
		}
	}
}
