package webui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A session made at login is taken by every server with the same token until it ends: after
// sessionLifetime, with another token, or with its end changed by hand.
func TestSessionsEnd(t *testing.T) {
	clock := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	token := "s3cret"
	u := New(Options{Token: func() string { return token }, Facts: func() []Fact { return nil }})
	u.now = func() time.Time { return clock }
	login := httptest.NewRecorder()
	u.startSession(login, httptest.NewRequest(http.MethodPost, Prefix+"login", nil), token)
	cookie := login.Result().Cookies()[0]
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.MaxAge != int(sessionLifetime/time.Second) {
		t.Fatalf("session cookie %+v", cookie)
	}
	takes := func(value string) bool {
		r := httptest.NewRequest(http.MethodGet, Prefix, nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: value})
		_, ok := u.session(httptest.NewRecorder(), r)
		return ok
	}
	if !takes(cookie.Value) {
		t.Fatal("a fresh session is refused")
	}
	clock = clock.Add(sessionLifetime - time.Minute)
	if !takes(cookie.Value) {
		t.Fatal("a session is refused before its end")
	}
	nonce, rest, _ := strings.Cut(cookie.Value, ".")
	_, mac, _ := strings.Cut(rest, ".")
	if takes(nonce + ".99999999999." + mac) {
		t.Fatal("a session whose end was changed is taken")
	}
	clock = clock.Add(time.Minute)
	if takes(cookie.Value) {
		t.Fatal("a session is taken after its end")
	}
	clock = clock.Add(-time.Hour)
	token = "rotated"
	if takes(cookie.Value) {
		t.Fatal("a session is taken after the token changed")
	}
}
