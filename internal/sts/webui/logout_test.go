package webui

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/sts/store/redis/redisstoretest"
)

// tokenSite is a page behind the token "s3cret", served on a loopback port.
func tokenSite(t *testing.T) (*UI, *httptest.Server) {
	t.Helper()
	return tokenSiteOn(t, memory.New(), nil)
}

// tokenSiteOn is tokenSite on st, sharing logouts with shared (nil: none).
func tokenSiteOn(t *testing.T, st store.Store, shared Logouts) (*UI, *httptest.Server) {
	t.Helper()
	u := New(Options{Store: st, Token: func() string { return "s3cret" }, Facts: func() []Fact { return nil },
		MaxBodyBytes: 1 << 20, Interval: 10 * time.Millisecond, SharedLogouts: shared,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	site := httptest.NewServer(u)
	t.Cleanup(func() { u.Close(); site.Close() })
	return u, site
}

// noRedirects is a client that hands back a redirect instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// logIn posts the login form with next and returns the answer (the session cookie, the redirect).
func logIn(t *testing.T, site *httptest.Server, next string) *http.Response {
	t.Helper()
	resp, err := noRedirects.PostForm(site.URL+Prefix+"login", url.Values{"token": {"s3cret"}, "next": {next}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d, want 303", resp.StatusCode)
	}
	return resp
}

// getWith sends GET target with cookie and returns the status.
func getWith(t *testing.T, site *httptest.Server, target string, cookie *http.Cookie) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, site.URL+target, nil)
	req.AddCookie(cookie)
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Log out ends the session on the server, not only in the browser: a copy of the cookie taken
// before (off a laptop, from a proxy's log) no longer opens the page, nor a live stream, and the
// stream opened with it ends. The probe found the cookie still taken for its 12 hours.
func TestAdversarialLogOutEndsTheSession(t *testing.T) {
	_, site := tokenSite(t)
	cookie := logIn(t, site, Prefix).Cookies()[0]
	if status := getWith(t, site, Prefix, cookie); status != http.StatusOK {
		t.Fatalf("the overview with a fresh session: %d", status)
	}
	req, _ := http.NewRequest(http.MethodGet, site.URL+Prefix+"events", nil)
	req.AddCookie(cookie)
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("the stream: %v, %v", stream, err)
	}
	defer stream.Body.Close()
	events := bufio.NewReader(stream.Body)
	if line, err := events.ReadString('\n'); err != nil || line != "event: view\n" {
		t.Fatalf("the stream's first line: %q, %v", line, err)
	}

	logOut(t, site, cookie)
	for _, target := range []string{Prefix, Prefix + "events", Prefix + "lists/x"} {
		if status := getWith(t, site, target, cookie); status != http.StatusUnauthorized {
			t.Errorf("GET %s with the logged-out cookie: %d, want 401", target, status)
		}
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, events); ended <- err }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream opened with the session went on after log out")
	}
	if status := getWith(t, site, Prefix, logIn(t, site, Prefix).Cookies()[0]); status != http.StatusOK {
		t.Errorf("a new login after log out: %d, want 200", status)
	}
}

// logOut posts the log-out form of the session cookie holds.
func logOut(t *testing.T, site *httptest.Server, cookie *http.Cookie) {
	t.Helper()
	nonce, _, _ := strings.Cut(cookie.Value, ".")
	logout, _ := http.NewRequest(http.MethodPost, site.URL+Prefix+"logout", strings.NewReader(url.Values{"csrf": {newSession("s3cret", nonce).csrf}}.Encode()))
	logout.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	logout.AddCookie(cookie)
	resp, err := noRedirects.Do(logout)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("log out: %d, cookies %v: want 303 and the cookie deleted", resp.StatusCode, resp.Cookies())
	}
}

// A logout on one pod ends the session on every pod of the Redis backend: the cookie is
// stateless, and the pods behind one Service took a copy logged out on another until its end.
func TestAdversarialLogOutEndsTheSessionOnEveryServer(t *testing.T) {
	redisURL := redistest.Start(t).URL()
	first := redisstoretest.Open(t, redisURL, redisstore.Options{})
	second := redisstoretest.Open(t, redisURL, redisstore.Options{})
	_, one := tokenSiteOn(t, first, first)
	_, other := tokenSiteOn(t, second, second)
	cookie := logIn(t, one, Prefix).Cookies()[0]
	kept := logIn(t, other, Prefix).Cookies()[0]
	if status := getWith(t, other, Prefix, cookie); status != http.StatusOK {
		t.Fatalf("the overview of the other server with the session: %d, want 200", status)
	}
	logOut(t, one, cookie)
	for _, site := range []*httptest.Server{one, other} {
		if status := getWith(t, site, Prefix, cookie); status != http.StatusUnauthorized {
			t.Errorf("GET %s with the cookie logged out on the first server: %d, want 401", site.URL, status)
		}
		if status := getWith(t, site, Prefix, kept); status != http.StatusOK {
			t.Errorf("GET %s with another session: %d, want 200", site.URL, status)
		}
	}
}

// The login's next= stays on the page, as a browser resolves it: dot segments, escaped ones and
// backslashes (a slash to a browser) cannot lead to another path of the server, such as a
// protocol command (the probe: /ui/../sts/RESET), nor to another site.
func TestAdversarialLoginNextStaysOnThePage(t *testing.T) {
	_, site := tokenSite(t)
	base, _ := url.Parse(site.URL + Prefix + "login")
	// asBrowser resolves a Location as a browser does, which takes %2e for a dot and \ for /.
	asBrowser := func(location string) *url.URL {
		location = strings.NewReplacer("%2e", ".", "%2E", ".", `\`, "/").Replace(location)
		loc, err := url.Parse(location)
		if err != nil {
			t.Fatalf("Location %q: %v", location, err)
		}
		return base.ResolveReference(loc)
	}
	// want is the Location, "" for any that stays on the page.
	for next, want := range map[string]string{
		"/ui/../sts/RESET?FILENAME=x":       Prefix,
		"/ui/%2e%2e/sts/RESET?FILENAME=x":   Prefix,
		"/ui/.%2E/.%2e/sts/RESET":           Prefix,
		"/ui/lists/../../metrics":           Prefix,
		"//evil.example/ui/":                Prefix,
		"https://evil.example/ui/":          Prefix,
		"/ui":                               Prefix,
		`/ui/..\sts/RESET`:                  "",
		"/ui/..%5csts/RESET":                "",
		"/ui/./lists/x":                     "/ui/lists/x",
		"/ui/lists/a%20b?sort=length&q=%2F": "/ui/lists/a%20b?sort=length&q=%2F",
		"/ui/?page=2":                       "/ui/?page=2",
	} {
		location := logIn(t, site, next).Header.Get("Location")
		if got := asBrowser(location); got.Host != base.Host || !strings.HasPrefix(got.Path, Prefix) || want != "" && location != want {
			t.Errorf("next=%q: Location %q, a browser goes to %s; want %q", next, location, got, want)
		}
	}
}
