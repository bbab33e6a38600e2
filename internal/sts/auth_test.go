package sts

import (
	"context"
	"net/http"
	"testing"
)

func TestAuthentication(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuthToken = "s3cret" })
	refused := []struct {
		method, target, contentType, body string
		header                            []string
	}{
		{"GET", "/sts/STATUS", "", "", nil},
		{"GET", "/sts", "", "", nil},
		{"GET", "/sts/STATUS?TOKEN=wrong", "", "", nil},
		{"GET", "/sts/STATUS?TOKEN=s3cret2", "", "", nil},
		{"GET", "/sts/STATUS?TOKEN=", "", "", nil},
		{"GET", "/sts/STATUS", "", "", []string{"Authorization", "Bearer wrong"}},
		{"GET", "/sts/STATUS", "", "", []string{"Authorization", "Basic s3cret"}},
		{"POST", "/sts/ADD", "application/x-www-form-urlencoded", "FILENAME=x&LINE=y&TOKEN=nope", nil},
	}
	for _, r := range refused {
		a := ts.do(t, r.method, r.target, r.contentType, r.body, r.header...)
		if a.status != http.StatusUnauthorized || a.body != koBody("Unauthorized") || a.header.Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("%s %s %v: %d %q", r.method, r.target, r.header, a.status, a.body)
		}
	}
	if status, m := ts.getJSON(t, "/sts/STATUS", true); status != http.StatusUnauthorized || m["reason"] != "unauthorized" {
		t.Errorf("JSON 401: %d %v", status, m)
	}
	ts.expect(t, "/sts/STATUS?TOKEN=s3cret", koBody("Database was empty !")) // nothing was added

	accepted := []struct {
		method, target, contentType, body string
		header                            []string
	}{
		{"GET", "/sts/ADD?FILENAME=x&LINE=1&TOKEN=s3cret", "", "", nil},
		{"GET", "/sts/ADD?FILENAME=x&LINE=2", "", "", []string{"Authorization", "Bearer s3cret"}},
		{"GET", "/sts/ADD?FILENAME=x&LINE=3", "", "", []string{"Authorization", "bearer s3cret"}},
		{"POST", "/sts/ADD", "application/x-www-form-urlencoded", "FILENAME=x&LINE=4&TOKEN=s3cret", nil},
	}
	for _, r := range accepted {
		a := ts.do(t, r.method, r.target, r.contentType, r.body, r.header...)
		ts.checkCommandAnswer(t, r.target, a)
		if a.body != okBody("") {
			t.Errorf("%s %s %v: %q", r.method, r.target, r.header, a.body)
		}
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=x&TOKEN=s3cret", okBody("4"))
	// Health endpoints stay open.
	for _, path := range []string{"/healthz", "/readyz"} {
		if a := ts.do(t, http.MethodGet, path, "", ""); a.status == http.StatusUnauthorized {
			t.Errorf("%s asked for a token", path)
		}
	}
}

func TestHealth(t *testing.T) {
	ts := startServer(t)
	if a := ts.do(t, http.MethodGet, "/healthz", "", ""); a.status != http.StatusOK || a.body != "ok" {
		t.Errorf("/healthz: %d %q", a.status, a.body)
	}
	if a := ts.do(t, http.MethodGet, "/readyz", "", ""); a.status != http.StatusServiceUnavailable {
		t.Errorf("/readyz before startup loading: %d %q", a.status, a.body)
	}
	ts.srv.LoadAtStartup(context.Background())
	if a := ts.do(t, http.MethodGet, "/readyz", "", ""); a.status != http.StatusOK || a.body != "ok" {
		t.Errorf("/readyz after startup loading: %d %q", a.status, a.body)
	}
	if a := ts.do(t, http.MethodGet, "/healthz", "", ""); a.status != http.StatusOK {
		t.Errorf("/healthz: %d", a.status)
	}
}

// TestWrongTokensLoseNothing sends wrong tokens with every kind of change: each is refused with
// 401 and a KO body, and nothing changes.
func TestWrongTokensLoseNothing(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuthToken = "right-token" })
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=a&TOKEN=right-token", okBody(""))
	for _, r := range []struct{ method, target, body string }{
		{"GET", "/sts/READ?FILENAME=l&KEEP=FALSE&TOKEN=right-toke", ""},
		{"GET", "/sts/READ?FILENAME=l&KEEP=FALSE&TOKEN=right-token%20", ""},
		{"GET", "/sts/READ?FILENAME=l&KEEP=FALSE&WAIT=1000&TOKEN=RIGHT-TOKEN", ""},
		{"GET", "/sts/RESET?FILENAME=l&TOKEN=", ""},
		{"POST", "/sts/LOAD?FILENAME=l&TOKEN=wrong", "x\ny\n"},
		{"POST", "/sts/LOAD?FILENAME=l", "TOKEN=right-token"}, // a LOAD body is the file, not a form
		{"GET", "/sts/INITFILE?FILENAME=l&TOKEN=right-token-and-more", ""},
	} {
		a := ts.do(t, r.method, r.target, "text/plain", r.body)
		if a.status != http.StatusUnauthorized || a.body != koBody("Unauthorized") {
			t.Errorf("%s %s: %d %q", r.method, r.target, a.status, a.body)
		}
	}
	if got := ts.lines(t, "l"); len(got) != 1 || got[0] != "a" {
		t.Errorf("the list after refused requests: %q", got)
	}
}

// A token can be replaced (a rotated Secret), not added to a server started without one nor
// taken away: either would change who may use the lists.
func TestSetAuthTokenReplacesOnly(t *testing.T) {
	open := startServer(t)
	if err := open.srv.SetAuthToken("late"); err == nil {
		t.Error("a server without a token was given one")
	}
	open.expect(t, "/sts/LENGTH?FILENAME=x", koBody("x not loaded yet !"))

	guarded := startServer(t, func(c *Config) { c.AuthToken = "old" })
	if err := guarded.srv.SetAuthToken(""); err == nil {
		t.Error("the token was taken away")
	}
	if err := guarded.srv.SetAuthToken("new"); err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]int{"new": http.StatusOK, "old": http.StatusUnauthorized} {
		if a := guarded.do(t, http.MethodGet, "/sts/STATUS?TOKEN="+token, "", ""); a.status != want {
			t.Errorf("TOKEN=%s after the replacement: HTTP %d, want %d", token, a.status, want)
		}
	}
}
