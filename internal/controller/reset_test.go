package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

func TestSetReset(t *testing.T) {
	now := metav1.Now()
	earlier := metav1.NewTime(now.Add(-time.Hour))
	lists := []protocol.List{{Name: "a", Length: 3}, {Name: "b", Length: 2, Leased: 1}}
	refused := &refusedError{command: "RELOAD", httpStatus: http.StatusNotFound, message: "Could not reload b: file not found !"}
	for _, tc := range []struct {
		name        string
		res         resetResult
		status      metav1.ConditionStatus
		reason      string
		message     string
		observed    string
		lastResetAt *metav1.Time
	}{
		{"done", resetResult{value: "v2", lists: lists}, metav1.ConditionTrue, stsv1alpha1.ReasonReset,
			`Reset for sts.tableserver.dev/reset-at="v2": 2 lists reloaded from their sources (5 lines); the leases of 1 lines read before the reset ended`, "v2", &now},
		{"refused in part", resetResult{value: "v2", lists: lists[:1], err: refused}, metav1.ConditionFalse, stsv1alpha1.ReasonResetFailed,
			"could not reload every dataset, and those keep their lines: RELOAD: HTTP 404: Could not reload b: file not found !; 1 lists reloaded", "v2", &now},
		{"refused all", resetResult{value: "v2", err: refused}, metav1.ConditionFalse, stsv1alpha1.ReasonResetFailed,
			"0 lists reloaded", "v2", &earlier},
		{"pending", resetResult{value: "v2", pending: true, err: errors.New("the table server does not answer")}, metav1.ConditionUnknown,
			stsv1alpha1.ReasonResetPending, `The reset for sts.tableserver.dev/reset-at="v2" waits: the table server does not answer`, "v1", &earlier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := stsv1alpha1.SimpleTableServerStatus{ObservedResetAt: "v1", LastResetTime: &earlier}
			setReset(&status, 3, &tc.res, now)
			c := meta.FindStatusCondition(status.Conditions, stsv1alpha1.ConditionReset)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) || c.ObservedGeneration != 3 {
				t.Errorf("Reset condition %+v, want %s %s saying %q", c, tc.status, tc.reason, tc.message)
			}
			if status.ObservedResetAt != tc.observed || !status.LastResetTime.Equal(tc.lastResetAt) {
				t.Errorf("observedResetAt %q lastResetTime %v, want %q %v", status.ObservedResetAt, status.LastResetTime, tc.observed, tc.lastResetAt)
			}
		})
	}
}

func TestResetRefused(t *testing.T) {
	for err, want := range map[error]bool{
		errors.New("RELOAD: dial tcp: connection refused"):                  false,
		&refusedError{httpStatus: http.StatusServiceUnavailable}:            false,
		&refusedError{httpStatus: http.StatusConflict}:                      false,
		&refusedError{httpStatus: http.StatusUnauthorized}:                  false,
		&refusedError{httpStatus: http.StatusNotFound}:                      true,
		&refusedError{httpStatus: http.StatusInsufficientStorage}:           true,
		fmt.Errorf("x: %w", &refusedError{httpStatus: http.StatusNotFound}): true,
	} {
		if got := resetRefused(err); got != want {
			t.Errorf("resetRefused(%v) = %v, want %v", err, got, want)
		}
	}
}

// annotateReset sets the reset-at annotation of tableServer to value, as kubectl annotate --overwrite.
func (s *envtestSuite) annotateReset(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, value string) {
	t.Helper()
	cur := tableServer.DeepCopy()
	s.get(t, cur)
	patched := cur.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[stsv1alpha1.AnnotationResetAt] = value
	if err := s.k8s.Patch(context.Background(), patched, client.MergeFrom(cur)); err != nil {
		t.Fatal(err)
	}
}

// A new reset-at value reloads every dataset from its source into the running server once: the
// consumed lines are back, lastResetTime and an event say so, and neither the polls that follow
// nor a reconcile from a fresh start reload again. A new value resets again.
func TestResetAnnotationReloadsOnce(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\nu3\n", "cards": "c1\nc2\n"})
	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE")
	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE")
	ts.call(t, "/sts/ADD?FILENAME=mine&LINE=m")

	s.annotateReset(t, tableServer, "2026-05-04T10:00:00+00:00")
	cur := s.waitForMessage(t, tableServer, stsv1alpha1.ConditionReset, metav1.ConditionTrue, stsv1alpha1.ReasonReset, "2 lists reloaded", reconcileWait)
	if cur.Status.ObservedResetAt != "2026-05-04T10:00:00+00:00" || cur.Status.LastResetTime == nil {
		t.Errorf("observedResetAt %q lastResetTime %v", cur.Status.ObservedResetAt, cur.Status.LastResetTime)
	}
	if n := ts.length("users"); n != 3 || ts.length("mine") != 1 {
		t.Errorf("after the reset users has %d lines, mine %d: want the dataset whole and the client's list kept", n, ts.length("mine"))
	}
	eventually(t, reconcileWait, func() error {
		s.get(t, cur)
		if listLength(cur, "users") != 3 {
			return fmt.Errorf("status.lists %+v", cur.Status.Lists)
		}
		return nil
	})
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeNormal, stsv1alpha1.ReasonReset, "2026-05-04T10:00:00+00:00")
	})

	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE")
	ts.waitPolls(t, 3)
	if _, err := s.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tableServer)}); err != nil {
		t.Fatal(err)
	}
	if n, length := ts.reloads.Load(), ts.length("users"); n != 1 || length != 2 {
		t.Errorf("%d RELOADs for one value, users has %d lines: want one reload, the line read since consumed", n, length)
	}

	s.annotateReset(t, tableServer, "second")
	s.waitForMessage(t, tableServer, stsv1alpha1.ConditionReset, metav1.ConditionTrue, stsv1alpha1.ReasonReset, `"second"`, reconcileWait)
	if n, length := ts.reloads.Load(), ts.length("users"); n != 2 || length != 3 {
		t.Errorf("%d RELOADs after a second value, users has %d lines", n, length)
	}
}

// A reset the server cannot carry out in full (a dataset's file gone) is a False Reset condition
// and a Warning, once: the value is handled, and the polls that follow do not try again.
func TestResetFailureIsAConditionNotARetryLoop(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\nu2\n", "cards": "c1\n"})
	ts.call(t, "/sts/READ?FILENAME=users&KEEP=FALSE")
	ts.call(t, "/sts/READ?FILENAME=cards&KEEP=FALSE")
	for _, l := range ts.cfg.Loads {
		if l.List == "cards" {
			if err := os.Remove(l.Path); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.annotateReset(t, tableServer, "r1")
	cur := s.waitForMessage(t, tableServer, stsv1alpha1.ConditionReset, metav1.ConditionFalse, stsv1alpha1.ReasonResetFailed, "file not found", reconcileWait)
	if cur.Status.ObservedResetAt != "r1" {
		t.Errorf("observedResetAt %q, want the value handled", cur.Status.ObservedResetAt)
	}
	if c := meta.FindStatusCondition(cur.Status.Conditions, stsv1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v after a failed reset, want True: the server serves", c)
	}
	if ts.length("users") != 2 || ts.length("cards") != 0 {
		t.Errorf("users %d lines, cards %d: want users reloaded, cards as it was", ts.length("users"), ts.length("cards"))
	}
	eventually(t, 10*time.Second, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, stsv1alpha1.ReasonResetFailed, `"r1"`)
	})
	ts.waitPolls(t, 3)
	if n := ts.reloads.Load(); n != 1 {
		t.Errorf("%d RELOADs for one failed reset, want 1", n)
	}
}
