package controller

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// The token a server last accepted is offered again only to the same resource reading the same
// Secret key: not after the spec names another Secret, nor to a resource recreated under the
// same name, nor after the resource is gone.
func TestAcceptedTokensStayWithTheirResourceAndSecret(t *testing.T) {
	tokens := newAcceptedTokens()
	tableServer := specstest.New("a", specstest.WithAuthToken("token", "key"))
	tableServer.UID = "first"
	tokens.accepted(tableServer, "old", true, time.Now())
	if got, ok := tokens.previous(tableServer); !ok || got != "old" {
		t.Fatalf("previous = %q, %v; want old", got, ok)
	}
	otherSecret := specstest.New("a", specstest.WithAuthToken("other", "key"))
	otherSecret.UID = "first"
	recreated := specstest.New("a", specstest.WithAuthToken("token", "key"))
	recreated.UID = "second"
	for name, s := range map[string]*stsv1alpha1.SimpleTableServer{"another Secret": otherSecret, "a recreated resource": recreated} {
		if got, ok := tokens.previous(s); ok {
			t.Errorf("%s was offered %q", name, got)
		}
	}
	tokens.forget(client.ObjectKeyFromObject(tableServer))
	if got, ok := tokens.previous(tableServer); ok {
		t.Errorf("a forgotten resource was offered %q", got)
	}
}

// A server that takes only the previous token for longer than the kubelet's refresh takes is
// reported once, and again only after it took the Secret's token and fell back once more.
func TestServerKeepingThePreviousTokenIsReportedOnce(t *testing.T) {
	tokens := newAcceptedTokens()
	tableServer := specstest.New("a", specstest.WithAuthToken("token", "key"))
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	tokens.accepted(tableServer, "old", true, t0)
	for _, step := range []struct {
		token   string
		current bool
		at      time.Duration
		overdue bool
	}{
		{"old", false, time.Minute, false}, // the Secret changed; the kubelet has not caught up
		{"old", false, 3 * time.Minute, false},
		{"old", false, 6*time.Minute + time.Second, true}, // 5m after the first refusal
		{"old", false, 7 * time.Minute, false},            // reported once
		{"new", true, 8 * time.Minute, false},
		{"new", false, 9 * time.Minute, false}, // a second rotation
		{"new", false, 15 * time.Minute, true},
	} {
		if got := tokens.accepted(tableServer, step.token, step.current, t0.Add(step.at)); got != step.overdue {
			t.Errorf("at %v, %s accepted (current %v): overdue %v, want %v", step.at, step.token, step.current, got, step.overdue)
		}
	}
}
