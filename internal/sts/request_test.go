package sts

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestPostForm(t *testing.T) {
	ts := startServer(t)
	post := func(target, contentType, body, want string) {
		t.Helper()
		a := ts.do(t, http.MethodPost, target, contentType, body)
		ts.checkCommandAnswer(t, target, a)
		if a.body != want {
			t.Errorf("POST %s %q\n got %q\nwant %q", target, body, a.body, want)
		}
	}
	form := "application/x-www-form-urlencoded"
	post("/sts/ADD", form, "FILENAME=p.txt&LINE=a+b%26c&ADD_MODE=LAST", okBody(""))
	// Query-only names count; the body wins on conflicts.
	post("/sts/ADD?FILENAME=p.txt&LINE=from+query&ADD_MODE=FIRST", form, "LINE=from+body&ADD_MODE=LAST", okBody(""))
	// Any content type, or none, is parsed like a query string after trimming.
	post("/sts/ADD", "text/plain", "\r\n  FILENAME=p.txt&LINE=plain&ADD_MODE=LAST \r\n", okBody(""))
	post("/sts/ADD", "", "FILENAME=p.txt&LINE=none&ADD_MODE=LAST", okBody(""))
	// A JSON body yields junk names, so FILENAME is missing.
	post("/sts/ADD", "application/json", `{"FILENAME":"p.txt","LINE":"x"}`, koBody("FILENAME parameter was missing !"))
	want := []string{"a b&c", "from body", "plain", "none"}
	if got := ts.lines(t, "p.txt"); !slices.Equal(got, want) {
		t.Errorf("list %q, want %q", got, want)
	}
	post("/sts/FIND", form, "FILENAME=p.txt&LINE=plain&KEEP=FALSE", okBody("plain"))
	// PUT bodies are not parsed: only the query counts.
	a := ts.do(t, http.MethodPut, "/sts/LENGTH", form, "FILENAME=p.txt")
	if a.body != koBody("FILENAME parameter was missing !") {
		t.Errorf("PUT with a form body: %q", a.body)
	}
}

func TestMultipart(t *testing.T) {
	ts := startServer(t)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range [][2]string{{"FILENAME", "m.txt"}, {"LINE", "line one\r\nline two\nthree"}, {"ADD_MODE", "LAST"}} {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	a := ts.do(t, http.MethodPost, "/sts/ADD?ADD_MODE=bogus", mw.FormDataContentType(), body.String())
	ts.checkCommandAnswer(t, "multipart ADD", a)
	if a.body != okBody("") {
		t.Fatalf("multipart ADD: %q", a.body)
	}
	// The part's lines are joined without separators.
	ts.expect(t, "/sts/READ?FILENAME=m.txt", okBody("line oneline twothree"))

	a = ts.do(t, http.MethodPost, "/sts/ADD", "multipart/form-data", body.String())
	if a.status != http.StatusBadRequest || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") ||
		a.body != "BAD REQUEST: Content type is multipart/form-data but boundary missing. Usage: GET /example/file.html" {
		t.Errorf("multipart without boundary: %d %q %q", a.status, a.header.Get("Content-Type"), a.body)
	}
	a = ts.do(t, http.MethodPost, "/sts/ADD", "multipart/form-data; boundary=nothere", "garbage")
	if a.status != http.StatusBadRequest || !strings.HasPrefix(a.body, "<html><title>KO</title>\n<body>Error : ") {
		t.Errorf("malformed multipart: %d %q", a.status, a.body)
	}
}

func TestDecodingOverHTTP(t *testing.T) {
	ts := startServer(t)
	add := func(query string) {
		t.Helper()
		if a := ts.rawGet(t, "/sts/ADD?FILENAME=d&ADD_MODE=LAST&"+query); a.status != http.StatusOK || a.body != okBody("") {
			t.Fatalf("ADD %s: %d %q", query, a.status, a.body)
		}
	}
	add("LINE=a+b%2Bc")
	add("LINE=caf%E9")
	add("LINE=%C3x")
	add("LINE=nul%00byte")
	add("LINE=raw\xe9byte")
	add("LINE=caf\xc3\xa9")
	add("LINE=hash#kept")
	add("%20LINE%20=trimmed+name")
	add("LINE=first&LINE=last+wins")
	add("LINE") // no '=' is the empty string
	add("&&LINE=%20kept%20&&")
	want := []string{"a b+c", "caf\ufffd", "\ufffdx", "nul\x00byte", "raw\ufffdbyte", "café", "hash#kept", "trimmed name", "last wins", "", " kept "}
	if got := ts.lines(t, "d"); !slices.Equal(got, want) {
		t.Errorf("decoded lines\n got %q\nwant %q", got, want)
	}
	// Parameter names are case-sensitive.
	ts.expect(t, "/sts/LENGTH?filename=d", koBody("FILENAME parameter was missing !"))
}

func TestMalformedEscapes(t *testing.T) {
	ts := startServer(t)
	for _, target := range []string{"/sts/ADD?FILENAME=x&LINE=100%", "/sts/ADD?FILENAME=x&LINE=%zz", "/sts/ADD?FILENAME=x&LINE=%4", "/sts/ADD?FILE%zzNAME=x&LINE=y"} {
		a := ts.rawGet(t, target)
		if a.status != http.StatusBadRequest || !strings.HasPrefix(a.body, "<html><title>KO</title>\n<body>Error : malformed percent escape") {
			t.Errorf("%s: %d %q", target, a.status, a.body)
		}
	}
	a := ts.do(t, http.MethodPost, "/sts/ADD", "application/x-www-form-urlencoded", "FILENAME=x&LINE=%G1")
	if a.status != http.StatusBadRequest || !strings.Contains(a.body, "Error : malformed percent escape") {
		t.Errorf("malformed body: %d %q", a.status, a.body)
	}
	// In the path net/http refuses the request line itself, before any handler: still a 400.
	if a := ts.rawGet(t, "/sts/%zzREAD"); a.status != http.StatusBadRequest {
		t.Errorf("malformed path: %d %q", a.status, a.body)
	}
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !")) // nothing ran
}

func TestBodyTooLarge(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxBodyBytes = 1000 })
	a := ts.do(t, http.MethodPost, "/sts/ADD", "text/plain", "FILENAME=x&LINE="+strings.Repeat("y", 2000))
	if a.status != http.StatusRequestEntityTooLarge || a.body != koBody("Request body larger than 1000 bytes !") {
		t.Errorf("large body: %d %q", a.status, a.body)
	}
	a = ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=x", "text/plain", strings.Repeat("y\n", 1000))
	if a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("large LOAD: %d %q", a.status, a.body)
	}
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !"))
}

func TestMultipartAsJMeterSendsIt(t *testing.T) {
	ts := startServer(t)
	// JMeter's HC4 sampler with "Use multipart/form-data": a charset after the boundary, and
	// parts with their own Content-Type and Content-Transfer-Encoding.
	const boundary = "0nS8D4RDGbnQfzKzjrBbpDJ4bJD2jMxn"
	part := func(name, value string) string {
		return "--" + boundary + "\r\n" +
			`Content-Disposition: form-data; name="` + name + "\"\r\n" +
			"Content-Type: text/plain; charset=UTF-8\r\n" +
			"Content-Transfer-Encoding: 8bit\r\n\r\n" + value + "\r\n"
	}
	body := part("FILENAME", "jm.csv") + part("LINE", "caf\u00e9 au lait") + part("ADD_MODE", "LAST") + "--" + boundary + "--\r\n"
	for _, contentType := range []string{
		"multipart/form-data; boundary=" + boundary + "; charset=UTF-8",
		"multipart/form-data; charset=UTF-8; boundary=" + boundary,
		`multipart/form-data; boundary="` + boundary + `";charset=UTF-8`,
	} {
		a := ts.do(t, http.MethodPost, "/sts/ADD", contentType, body)
		ts.checkCommandAnswer(t, contentType, a)
		if a.body != okBody("") {
			t.Errorf("%s: %q", contentType, a.body)
		}
	}
	if got := ts.lines(t, "jm.csv"); !slices.Equal(got, []string{"caf\u00e9 au lait", "caf\u00e9 au lait", "caf\u00e9 au lait"}) {
		t.Errorf("list %q", got)
	}
	// A boundary with characters that mime would want quoted is still read as the original
	// reads it: the rest of the header.
	const odd = "a/b=c"
	oddBody := strings.ReplaceAll(part("FILENAME", "odd")+part("LINE", "x"), boundary, odd) + "--" + odd + "--\r\n"
	if a := ts.do(t, http.MethodPost, "/sts/ADD", "multipart/form-data; boundary="+odd, oddBody); a.body != okBody("") {
		t.Errorf("unquoted boundary %q: %d %q", odd, a.status, a.body)
	}
}
