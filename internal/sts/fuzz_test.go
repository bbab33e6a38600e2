package sts

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzHandler sends any request target, method, content type and body to the handler: it must
// answer every request that net/http accepts, without panicking or hanging, with a status of
// the protocol.
func FuzzHandler(f *testing.F) {
	for _, seed := range []struct{ method, target, contentType, body string }{
		{"GET", "/sts/READ?FILENAME=a.txt", "", ""},
		{"POST", "/sts/ADD", "application/x-www-form-urlencoded", "FILENAME=a.txt&LINE=x%zz"},
		{"POST", "/sts/FIND", "multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"LINE\"\r\n\r\n(a+)+b\r\n--b--\r\n"},
		{"get", "/sts/READMULTI?FILENAME=a.txt&NB_LINES=%2B2&FORMAT=JSON", "", ""},
		{"HEAD", "/sts/%52EAD?FILENAME=a.txt&KEEP=FALSE", "", ""},
		{"POST", "/sts/LOAD?FILENAME=b&MODE=FIRST", "text/plain", "x\r\ny"},
		{"GET", "/sts/SAVE?FILENAME=a.txt&ADD_TIMESTAMP=false", "", ""},
		{"GET", "/sts/FIND?FILENAME=a.txt&LINE=(a%2B)%2B$&FIND_MODE=REGEX_MATCH", "", ""},
	} {
		f.Add(seed.method, seed.target, seed.contentType, seed.body)
	}
	ts := startServer(f, func(c *Config) { c.RegexTimeout = 50 * time.Millisecond; c.MaxBodyBytes = 1 << 16 })
	ts.writeFile(f, "a.txt", "one\ntwo\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n")
	handler := ts.srv.Handler()
	// 507: a long run may create more lists than --max-lists, or a SAVE meet a nearly full disk.
	valid := map[int]bool{200: true, 400: true, 401: true, 403: true, 404: true, 409: true, 413: true, 500: true, 507: true}
	f.Fuzz(func(t *testing.T, method, target, contentType, body string) {
		head := method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + contentType + "\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			return // net/http answers 400 itself; no command runs
		}
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			handler.ServeHTTP(rec, req)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to %q within 10s", head)
		}
		if !valid[rec.Code] {
			t.Fatalf("status %d for %q", rec.Code, head)
		}
	})
}
