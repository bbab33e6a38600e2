package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// A reset (annotation sts.tableserver.dev/reset-at, a new value each time) puts every dataset
// back as its source holds it, in the running server: the operator calls the server's RELOAD
// once, through the Service. The server reads its sources itself (a file on a claim is only the
// pod's to read), each list replaced in one change; pods on Redis share their lists, so one of
// them reloading is enough, and a memory server has one pod.
//
// Once per value: the value handled goes to status.observedResetAt, so that a resync or a
// restarted operator does not reload again, and a value in Git that changes is a new reset.
// The call carries a REQUEST_ID made of the resource and the value, so that a retry of a reset
// whose answer was lost (a timeout, a status write that failed, a cache that had not seen the
// status yet) gets the first answer and does not reload a second time.

// resetResult is what a reconcile did for the reset-at annotation.
type resetResult struct {
	value string // the annotation's value
	// pending says the reset was not done: it is tried again at the next poll.
	pending bool
	// err says why it is pending, or which datasets the server could not reload.
	err error
	// lists are the lists the server reloaded.
	lists []protocol.List
}

// resetDatasets is the reset step: when tableServer's reset-at annotation has a value not handled yet,
// and the server runs the current spec and answers, it asks the server to reload its datasets,
// then reads STATUS again into server so that the status shows the lists as reset. It returns
// nil when there is nothing to reset.
func (r *SimpleTableServerReconciler) resetDatasets(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, d *appsv1.Deployment, server *serverObservation) *resetResult {
	value := tableServer.Annotations[stsv1alpha1.AnnotationResetAt]
	if value == tableServer.Status.ObservedResetAt {
		return nil
	}
	res := &resetResult{value: value}
	switch {
	case server.status == nil:
		res.pending, res.err = true, errors.New("the table server does not answer")
		return res
	case !rolledOut(d):
		// The pod being replaced would reload, and a memory server's new pod start over anyway.
		res.pending, res.err = true, errors.New("the Deployment is replacing its pods")
		return res
	}
	res.lists, res.err = server.via.reload(ctx, resetRequestID(tableServer, value))
	if res.err != nil && !resetRefused(res.err) {
		res.pending = true
		return res
	}
	if status, err := server.via.status(ctx); err == nil {
		server.status = status
	}
	return res
}

// resetRequestID is the REQUEST_ID of the reset of tableServer for value: the same for every try.
func resetRequestID(tableServer *stsv1alpha1.SimpleTableServer, value string) string {
	sum := sha256.Sum256([]byte(string(tableServer.UID) + "\x00" + value))
	return "reset-" + hex.EncodeToString(sum[:16])
}

// resetRefused says whether the server answered a RELOAD with what it could not reload, which
// asking again would not change (a file gone, a list full; those it could reload were): the
// value is then handled. A transport error, a server starting, stopping or cut off from its
// Redis (503), a retry that found the first try still running (409) or a token rotating (401)
// leave it to the next poll.
func resetRefused(err error) bool {
	var refused *refusedError
	if !errors.As(err, &refused) {
		return false
	}
	switch refused.httpStatus {
	case http.StatusServiceUnavailable, http.StatusConflict, http.StatusUnauthorized:
		return false
	}
	return true
}

// setReset records res in status: the Reset condition, and unless the reset is pending, the
// value handled and, when the server reloaded anything, the time.
func setReset(status *stsv1alpha1.SimpleTableServerStatus, generation int64, res *resetResult, now metav1.Time) {
	setConditions(status, generation, now, resetCondition(res))
	if res.pending {
		return
	}
	status.ObservedResetAt = res.value
	if res.err == nil || len(res.lists) > 0 {
		status.LastResetTime = &now
	}
}

// resetCondition says how the reset res went. The annotation's value is in every message, so that
// each reset's outcome is an event of its own.
func resetCondition(res *resetResult) metav1.Condition {
	const typ = stsv1alpha1.ConditionReset
	var lines, leased int64
	for _, l := range res.lists {
		lines += l.Length
		leased += l.Leased
	}
	done := fmt.Sprintf("%d lists reloaded from their sources (%d lines)", len(res.lists), lines)
	if leased > 0 {
		done += fmt.Sprintf("; the leases of %d lines read before the reset ended: they do not come back", leased)
	}
	switch {
	case res.pending:
		return condition(typ, metav1.ConditionUnknown, stsv1alpha1.ReasonResetPending, fmt.Sprintf(
			"The reset for %s=%q waits: %v (tried again every statusRefreshInterval)", stsv1alpha1.AnnotationResetAt, res.value, res.err))
	case res.err != nil:
		return condition(typ, metav1.ConditionFalse, stsv1alpha1.ReasonResetFailed, fmt.Sprintf(
			"The reset for %s=%q could not reload every dataset, and those keep their lines: %v; %s. "+
				"Set a new value to try again", stsv1alpha1.AnnotationResetAt, res.value, res.err, done))
	}
	return condition(typ, metav1.ConditionTrue, stsv1alpha1.ReasonReset, fmt.Sprintf(
		"Reset for %s=%q: %s", stsv1alpha1.AnnotationResetAt, res.value, done))
}
