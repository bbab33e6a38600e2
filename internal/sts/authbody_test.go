package sts

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// countingBody is a request body that counts the bytes the handler reads from it.
type countingBody struct {
	r    io.Reader
	read int
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

func (b *countingBody) Close() error { return nil }

// The token is checked before the body is read: a request whose head carries it has its body
// read and run as before; without it, a bulk load's body is not read at all and a form's only
// up to authPrefixBytes, where a TOKEN field lets the rest be read. A refused request whose body
// was not read whole closes its connection.
func TestTokenCheckedBeforeTheBody(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuthToken = "s3cret" })
	handler := ts.srv.Handler()
	big := strings.Repeat("x", 1<<20)
	multipartBody := func(fields ...string) string {
		var sb strings.Builder
		for i := 0; i+1 < len(fields); i += 2 {
			sb.WriteString("--b\r\nContent-Disposition: form-data; name=\"" + fields[i] + "\"\r\n\r\n" + fields[i+1] + "\r\n")
		}
		return sb.String() + "--b--\r\n"
	}
	const form, multi = "application/x-www-form-urlencoded", "multipart/form-data; boundary=b"
	for _, c := range []struct {
		name, target, contentType, body, bearer string
		status                                  int
		maxRead                                 int // -1: the whole body
		json                                    bool
	}{
		{"form, Bearer header", "/sts/ADD", form, "FILENAME=l&LINE=" + big, "s3cret", 200, -1, false},
		{"form, TOKEN in the query", "/sts/ADD?TOKEN=s3cret", form, "FILENAME=l&LINE=" + big, "", 200, -1, false},
		{"form, TOKEN first in the body", "/sts/ADD", form, "TOKEN=s3cret&FILENAME=l&LINE=" + big, "", 200, -1, false},
		{"form, a wrong TOKEN in the body, the right one in the query", "/sts/ADD?TOKEN=s3cret", form, "TOKEN=no&FILENAME=l&LINE=y", "", 200, -1, false},
		{"multipart, TOKEN part first", "/sts/ADD", multi, multipartBody("TOKEN", "s3cret", "FILENAME", "l", "LINE", big), "", 200, -1, false},
		{"small form, no token", "/sts/ADD", form, "FILENAME=l&LINE=y", "", 401, -1, false},
		{"small form, wrong token, FORMAT=JSON in the body", "/sts/ADD", form, "FILENAME=l&LINE=y&TOKEN=no&FORMAT=JSON", "", 401, -1, true},
		{"form, no token", "/sts/ADD", form, "FILENAME=l&LINE=" + big, "", 401, authPrefixBytes + 1, false},
		{"form, FORMAT=JSON first, no token", "/sts/ADD", form, "FORMAT=JSON&FILENAME=l&LINE=" + big, "", 401, authPrefixBytes + 1, true},
		{"form, TOKEN past the first 64 KiB", "/sts/ADD", form, "FILENAME=l&LINE=" + big + "&TOKEN=s3cret", "", 401, authPrefixBytes + 1, false},
		{"form, wrong Bearer header", "/sts/ADD", form, "FILENAME=l&LINE=" + big, "wrong", 401, authPrefixBytes + 1, false},
		{"multipart, no token", "/sts/ADD", multi, multipartBody("FILENAME", "l", "LINE", big), "", 401, authPrefixBytes + 1, false},
		{"LOAD, no token", "/sts/LOAD?FILENAME=l", "text/plain", big, "", 401, 0, false},
		{"LOAD, TOKEN in the body", "/sts/LOAD?FILENAME=l", "application/x-www-form-urlencoded", "TOKEN=s3cret", "", 401, 0, false},
		{"LOAD, Bearer header", "/sts/LOAD?FILENAME=l&MODE=LAST", "text/plain", "a\nb\n", "s3cret", 200, -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := &countingBody{r: strings.NewReader(c.body)}
			r := httptest.NewRequest(http.MethodPost, c.target, body)
			r.ContentLength = int64(len(c.body))
			r.Header.Set("Content-Type", c.contentType)
			if c.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+c.bearer)
			}
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, r)
			if rec.Code != c.status {
				t.Fatalf("HTTP %d %q, want %d", rec.Code, rec.Body.String(), c.status)
			}
			wantRead := c.maxRead
			if wantRead < 0 {
				wantRead = len(c.body)
			}
			if body.read != wantRead {
				t.Errorf("%d bytes of the body read, want %d", body.read, wantRead)
			}
			closes := rec.Header().Get("Connection") == "close"
			if left := body.read < len(c.body); closes != left {
				t.Errorf("Connection: close is %v with %d of %d bytes read", closes, body.read, len(c.body))
			}
			if c.status != http.StatusUnauthorized {
				return
			}
			if c.json {
				var a struct{ Reason string }
				if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.Reason != "unauthorized" {
					t.Errorf("a JSON refusal: %q", rec.Body.String())
				}
			} else if rec.Body.String() != koBody("Unauthorized") || rec.Header().Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("an HTML refusal: %q %v", rec.Body.String(), rec.Header())
			}
		})
	}
	if got := ts.lines(t, "l"); len(got) != 7 || got[5] != "a" || got[6] != "b" {
		t.Errorf("the list after the accepted requests: %d lines", len(got))
	}
}

// A client that waits for "100 Continue" before it sends a body, as curl does for large ones,
// gets the 401 instead: the body is never asked for.
func TestUnauthenticatedLoadAsksForNoBody(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuthToken = "s3cret" })
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, "POST /sts/LOAD?FILENAME=l HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"+
		"Content-Length: 16777216\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	a := readAnswer(t, bufio.NewReader(conn), "POST")
	if a.status != http.StatusUnauthorized || a.body != koBody("Unauthorized") {
		t.Errorf("an unauthenticated LOAD expecting 100-continue: HTTP %d %q", a.status, a.body)
	}
}

// A body announced larger than --max-body-bytes is refused before any of it is read.
func TestBodyAnnouncedTooLargeIsNotRead(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxBodyBytes = 100 })
	body := &countingBody{r: strings.NewReader(strings.Repeat("x", 101))}
	r := httptest.NewRequest(http.MethodPost, "/sts/ADD", body)
	r.ContentLength = 101
	rec := httptest.NewRecorder()
	ts.srv.Handler().ServeHTTP(rec, r)
	if rec.Code != http.StatusRequestEntityTooLarge || rec.Body.String() != koBody("Request body larger than 100 bytes !") ||
		body.read != 0 || rec.Header().Get("Connection") != "close" {
		t.Errorf("HTTP %d %q, %d bytes read, Connection %q", rec.Code, rec.Body.String(), body.read, rec.Header().Get("Connection"))
	}
}
