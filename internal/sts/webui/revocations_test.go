package webui

import (
	"strconv"
	"testing"
	"time"
)

// The sessions a server remembers as logged out are bounded: past maxLoggedOut it ends every
// session begun until then instead (all log in again) and forgets them, so that no logged-out
// session comes back; one begun later is taken.
func TestLoggedOutSessionsAreBounded(t *testing.T) {
	var r revocations
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	end := now.Add(sessionLifetime)
	for i := range maxLoggedOut + 1 {
		r.revoke("session-"+strconv.Itoa(i), end, now)
	}
	if len(r.sessions) > maxLoggedOut {
		t.Fatalf("%d logged-out sessions kept, more than %d", len(r.sessions), maxLoggedOut)
	}
	if !r.ended("session-0", end) || !r.ended("never-logged-out", end) {
		t.Error("a session begun before the epoch is taken")
	}
	if r.ended("later", end.Add(2*time.Second)) {
		t.Error("a session begun after the epoch is refused")
	}
	// Sessions that ended by themselves make room before an epoch is needed.
	var s revocations
	for i := range maxLoggedOut {
		s.revoke("old-"+strconv.Itoa(i), now.Add(time.Minute), now)
	}
	s.revoke("new", end, now.Add(2*time.Minute))
	if !s.notBefore.IsZero() || len(s.sessions) != 1 || !s.ended("new", end) {
		t.Errorf("ended sessions were not dropped first: epoch %v, %d kept", s.notBefore, len(s.sessions))
	}
}
