package webui

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
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

// recordingProtocol answers every command OK and records which ran.
type recordingProtocol struct{ ran []string }

func (p *recordingProtocol) Run(_ context.Context, command string, _ map[string]string, _ []byte) Outcome {
	p.ran = append(p.ran, command)
	return Outcome{OK: true, Status: http.StatusOK, Text: "1"}
}
func (p *recordingProtocol) Export(http.ResponseWriter, *http.Request, string) {}
func (p *recordingProtocol) Matcher(string, string) (store.Matcher, error)     { return nil, nil }

// A POST to the page is bounded by --max-body-bytes, framing included, as docs/security.md
// says: a form or an upload one byte over is told so (413) and runs nothing, not taken for a
// form without its CSRF token; one of exactly the limit runs its command; a form within the
// limit still needs the token.
func TestAFormTooLargeIsToldSo(t *testing.T) {
	const limit = 1000
	p := &recordingProtocol{}
	lists := memory.New()
	if err := lists.Replace(context.Background(), "x", []string{"a"}, ""); err != nil { // the page shows a refused upload on its list
		t.Fatal(err)
	}
	u := New(Options{Store: lists, Protocol: p, Token: func() string { return "" }, Facts: func() []Fact { return nil },
		MaxBodyBytes: limit, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer u.Close()
	const nonce = "0123456789abcdef"
	csrf := newSession("", nonce).csrf
	post := func(contentType, body string) *httptest.ResponseRecorder {
		target := Prefix + "lists/x"
		if strings.HasPrefix(contentType, "multipart/") { // as the page's upload form sends it
			target += "?" + url.Values{"action": {"load"}, "csrf": {csrf}}.Encode()
		}
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: nonce + "."})
		w := httptest.NewRecorder()
		u.ServeHTTP(w, r)
		return w
	}
	// form is an ADD form of size bytes; upload an upload form of size bytes, framing included.
	form := func(size int) string {
		f := url.Values{"action": {"add"}, "csrf": {csrf}, "line": {""}}.Encode()
		return f + strings.Repeat("x", size-len(f))
	}
	multipartForm := func(file string) (string, string) {
		var b bytes.Buffer
		m := multipart.NewWriter(&b)
		_ = m.WriteField("mode", "LAST")
		f, _ := m.CreateFormFile("file", "f.txt")
		_, _ = io.WriteString(f, file)
		_ = m.Close()
		return m.FormDataContentType(), b.String()
	}
	upload := func(size int) (string, string) {
		_, empty := multipartForm("")
		return multipartForm(strings.Repeat("y", size-len(empty)))
	}
	const urlencoded = "application/x-www-form-urlencoded"
	for _, size := range []int{limit + 1, 2_086, 60_086, 70_000} {
		p.ran = nil
		if w := post(urlencoded, form(size)); w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "--max-body-bytes: 1000 bytes") || len(p.ran) != 0 {
			t.Errorf("a form of %d bytes: %d, ran %q\n%s", size, w.Code, p.ran, w.Body)
		}
		p.ran = nil
		if contentType, body := upload(size); len(body) != size {
			t.Fatalf("the upload form is %d bytes, want %d", len(body), size)
		} else if w := post(contentType, body); w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "--max-body-bytes") || len(p.ran) != 0 {
			t.Errorf("an upload of %d bytes: %d, ran %q", size, w.Code, p.ran)
		}
	}
	p.ran = nil
	if w := post(urlencoded, form(limit)); w.Code != http.StatusSeeOther || !slices.Equal(p.ran, []string{"ADD"}) {
		t.Errorf("a form of exactly the limit: %d, ran %q\n%s", w.Code, p.ran, w.Body)
	}
	p.ran = nil
	if contentType, body := upload(limit); len(body) != limit {
		t.Fatalf("the upload form is %d bytes, want %d", len(body), limit)
	} else if w := post(contentType, body); w.Code != http.StatusSeeOther || !slices.Equal(p.ran, []string{"LOAD"}) {
		t.Errorf("an upload of exactly the limit: %d, ran %q\n%s", w.Code, p.ran, w.Body)
	}
	p.ran = nil
	if w := post(urlencoded, url.Values{"action": {"add"}, "line": {"x"}}.Encode()); w.Code != http.StatusForbidden || len(p.ran) != 0 {
		t.Errorf("a form without its CSRF token: %d, ran %q", w.Code, p.ran)
	}
}
