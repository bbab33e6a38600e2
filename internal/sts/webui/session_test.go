package webui

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
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

// A live stream opened with a session ends when the token changes (and so when the session
// ends): the overview's figures stop reaching a browser that no longer has the token.
func TestStreamsEndWithTheirSession(t *testing.T) {
	var token atomic.Value
	token.Store("s3cret")
	u := New(Options{Store: memory.New(), Token: func() string { return token.Load().(string) }, Facts: func() []Fact { return nil },
		Interval: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer u.Close()
	site := httptest.NewServer(u)
	defer site.Close()
	login := httptest.NewRecorder()
	u.startSession(login, httptest.NewRequest(http.MethodPost, Prefix+"login", nil), "s3cret")
	req, _ := http.NewRequest(http.MethodGet, site.URL+Prefix+"events", nil)
	req.AddCookie(login.Result().Cookies()[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the stream with a session: %v, %v", resp, err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	if line, err := events.ReadString('\n'); err != nil || line != "event: view\n" {
		t.Fatalf("the stream's first line: %q, %v", line, err)
	}
	token.Store("rotated")
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, events); ended <- err }()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the stream broke: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream went on after the token changed")
	}
}

// A form larger than --max-body-bytes is told so (413), not taken for a form without its CSRF
// token; a form within the limit still needs the token.
func TestAFormTooLargeIsToldSo(t *testing.T) {
	u := New(Options{Store: memory.New(), Token: func() string { return "" }, Facts: func() []Fact { return nil },
		MaxBodyBytes: 1000, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer u.Close()
	const nonce = "0123456789abcdef"
	post := func(form url.Values) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Prefix+"lists/x", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: nonce + "."})
		w := httptest.NewRecorder()
		u.ServeHTTP(w, r)
		return w
	}
	csrf := newSession("", nonce).csrf
	if w := post(url.Values{"action": {"add"}, "line": {strings.Repeat("x", 70_000)}, "csrf": {csrf}}); w.Code != http.StatusRequestEntityTooLarge ||
		!strings.Contains(w.Body.String(), "--max-body-bytes: 1000 bytes") {
		t.Errorf("a form too large: %d %s", w.Code, w.Body)
	}
	if w := post(url.Values{"action": {"add"}, "line": {"x"}}); w.Code != http.StatusForbidden {
		t.Errorf("a form without its CSRF token: %d", w.Code)
	}
}
