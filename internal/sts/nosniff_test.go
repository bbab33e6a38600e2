package sts

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Every answer the server writes carries X-Content-Type-Options: nosniff, whatever its type: a
// browser sniffing an EXPORT (text/plain in the write charset) of a line holding markup would
// otherwise render it as a page of the server's origin. The issue found EXPORT without it; the
// plain-text, JSON, metrics and health answers lacked it too. (net/http's own answers to a
// request it cannot parse, a 431 say, are written before any handler and carry none.)
func TestAdversarialEveryAnswerIsNosniff(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuthToken = "s3cret"; c.MaxBodyBytes = 64 })
	const bearer = "Bearer s3cret"
	ts.do(t, http.MethodGet, "/sts/ADD?FILENAME=x&LINE=%3Chtml%3E%3Cscript%3Ealert(1)%3C/script%3E", "", "", "Authorization", bearer)
	requests := []struct{ method, target, contentType, body string }{
		{http.MethodGet, "/sts/EXPORT?FILENAME=x", "", ""},
		{http.MethodGet, "/sts/EXPORT?FILENAME=x&FORMAT=JSON", "", ""},
		{http.MethodGet, "/sts/EXPORT?FILENAME=missing", "", ""},
		{http.MethodGet, "/sts/READ?FILENAME=x&KEEP=TRUE", "", ""},
		{http.MethodGet, "/sts/STATUS?FORMAT=JSON", "", ""},
		{http.MethodGet, "/sts/NOPE", "", ""},
		{http.MethodGet, "/sts/", "", ""},
		{http.MethodPost, "/sts/LOAD?FILENAME=y", "text/plain", strings.Repeat("a\n", 100)}, // 413
		{http.MethodGet, "/sts/READ?FILENAME=x&LINE=%ZZ", "", ""},                           // a malformed escape: 400
		{http.MethodGet, "/", "", ""},
		{http.MethodGet, "/healthz", "", ""},
		{http.MethodGet, "/readyz", "", ""},
		{http.MethodGet, "/metrics", "", ""},
		{http.MethodGet, "/ui/", "", ""},
		{http.MethodGet, "/ui/assets/app.js", "", ""},
	}
	for _, auth := range []string{bearer, ""} { // with the token, and refused without
		for _, r := range requests {
			a := ts.do(t, r.method, r.target, r.contentType, r.body, "Authorization", auth)
			if got := a.header.Values("X-Content-Type-Options"); !slices.Equal(got, []string{"nosniff"}) {
				t.Errorf("%s %s (Authorization %q): %d %s with X-Content-Type-Options %q, want nosniff",
					r.method, r.target, auth, a.status, a.header.Get("Content-Type"), got)
			}
		}
	}
}
