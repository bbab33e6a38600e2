package sts

import (
	"bufio"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
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

// FuzzFormDecoding parses any body as a form, as its content type says (url-encoded or
// multipart): the decoder must give the parameters and the errors of the one it replaced
// (referenceParseForm, []rune and whole-body copies), keep none of the body's memory in a name
// or value (a list would keep the whole body for one line), and parse any first part of the body,
// as it does to find a token, without panicking.
func FuzzFormDecoding(f *testing.F) {
	for _, seed := range []struct{ contentType, body string }{
		{"application/x-www-form-urlencoded", "FILENAME=a.txt&LINE=x%zz"},
		{"", "  LINE=caf%C3%A9+au+lait&TOKEN=s3cret&&KEEP \r\n"},
		{"text/plain", "A=%E2%82%41%FF&B=%ED%A0%80&C=%C0%AF&D=%+1%-0%٤١%４Ｏ&E=\xff\xc3x\xed\xa0\x80"},
		{"", "X=%F0%9F%98%80%F0%9F%98" + strings.Repeat("%41", 300) + "%E2%82"}, // runs across escapeRun's buffer
		{"", "X=" + strings.Repeat("%C3%A9", 127) + "%F0%9F%98%80" + strings.Repeat("%C3%A9", 60)},
		{"", "a=%"}, {"", "a=%4"}, {"", "x%😀"}, {"", "%-1=x"}, {"", "a=b%\xc3A"},
		{"multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"LINE\"\r\n\r\na\r\nb\xff\r\n--b--\r\n"},
		{"multipart/form-data; boundary=b", "no boundary here"},
		{"multipart/form-data", "--b\r\n"},
		{"multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data\r\n\r\nunnamed\r\n--b\r\nContent-Disposition: form-data; name=\"TOKEN\"\r\n\r\nt\r\n--b"},
		{"multipart/form-data; boundary=b", "x--b\r\n--b\r\nContent-Disposition: form-data; name=\"A\"\r\n\r\n1\r\n--b\r\nContent-Disposition: form-data; name=\"A\"\r\n\r\n2"},
	} {
		f.Add(seed.contentType, seed.body)
	}
	f.Fuzz(func(t *testing.T, contentType, body string) {
		want := map[string]string{}
		wantErr := referenceParseForm(contentType, []byte(body), want)
		got := map[string]string{}
		gotErr := parseForm(contentType, body, got)
		switch {
		case (wantErr == nil) != (gotErr == nil) || wantErr != nil && *wantErr != *gotErr:
			t.Fatalf("parseForm(%q, %q): error %v, want %v", contentType, body, gotErr, wantErr)
		case wantErr == nil && !maps.Equal(got, want):
			t.Fatalf("parseForm(%q, %q) = %q, want %q", contentType, body, got, want)
		}
		for name, value := range got {
			if sharesMemory(name, body) || sharesMemory(value, body) {
				t.Fatalf("parseForm(%q, %q): %q=%q is held in the body's memory", contentType, body, name, value)
			}
		}
		for _, n := range []int{len(body) / 3, len(body) / 2, len(body) - 1} {
			if n >= 0 {
				parseFormPrefix(contentType, body[:n], map[string]string{})
			}
		}
	})
}

// sharesMemory reports whether a non-empty s lies in the memory of within.
func sharesMemory(s, within string) bool {
	if s == "" || within == "" {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(within)))
	return p >= lo && p < lo+uintptr(len(within))
}
