package sts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// awkwardLines are lines that the plain EXPORT/LOAD format cannot carry (CR, LF, CRLF) or that
// must go through untouched (a Windows path's backslashes, a tab, NUL, markup, an emoji, an
// empty line, a JSON-looking line).
var awkwardLines = []string{
	"a\rb", "c\nd", "e\r\nf", `C:\Users\jmeter\data.csv`, "tab\there", "nul\x00byte",
	"emoji 🎉 café", "", "<b>&amp;</b>", `["not","an","array"]`, "last",
}

// addLines puts lines at the end of list with ADD, percent-encoded as a plan would send them.
func (ts *testServer) addLines(t *testing.T, list string, lines []string) {
	t.Helper()
	for _, line := range lines {
		ts.expect(t, "/sts/ADD?FILENAME="+list+"&ADD_MODE=LAST&LINE="+url.QueryEscape(line), okBody(""))
	}
}

// exportJSON is the JSON answer of EXPORT, checked to be a successful one, and its raw body.
func (ts *testServer) exportJSON(t *testing.T, list string, header ...string) (protocol.Answer, string) {
	t.Helper()
	target := "/sts/EXPORT?FILENAME=" + list
	if len(header) == 0 {
		target += "&FORMAT=JSON"
	}
	a := ts.do(t, http.MethodGet, target, "", "", header...)
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("EXPORT %s in JSON: HTTP %d %q %q", list, a.status, a.header.Get("Content-Type"), a.body)
	}
	var answer protocol.Answer
	if err := json.Unmarshal([]byte(a.body), &answer); err != nil {
		t.Fatalf("EXPORT %s in JSON: %v in %q", list, err, a.body)
	}
	if !answer.OK || answer.Command != "EXPORT" || answer.Values != nil || answer.Length != nil {
		t.Fatalf("EXPORT %s in JSON: %+v", list, answer)
	}
	return answer, a.body
}

// loadJSON sends lines as LOAD's JSON body and returns the JSON answer and its status.
func (ts *testServer) loadJSON(t *testing.T, query, contentType, body string) (protocol.Answer, int) {
	t.Helper()
	a := ts.do(t, http.MethodPost, "/sts/LOAD?FORMAT=JSON&"+query, contentType, body)
	var answer protocol.Answer
	if err := json.Unmarshal([]byte(a.body), &answer); err != nil {
		t.Fatalf("LOAD %s: %v in %q", query, err, a.body)
	}
	return answer, a.status
}

// Issue 17: a line holding CR or LF came back from EXPORT→LOAD as several lines. In the JSON form
// (EXPORT with FORMAT=JSON or Accept, LOAD with Content-Type: application/json) every line comes
// back exactly; the plain form stays the original's file format, which splits them.
func TestJSONExportLoadRoundTrip(t *testing.T) {
	ts := startServer(t)
	ts.addLines(t, "src", awkwardLines)
	if got := ts.lines(t, "src"); !slices.Equal(got, awkwardLines) {
		t.Fatalf("the lines ADD put in: %q, want %q", got, awkwardLines)
	}

	exported, body := ts.exportJSON(t, "src")
	if !slices.Equal(exported.Lines, awkwardLines) {
		t.Errorf("EXPORT in JSON: %q, want %q", exported.Lines, awkwardLines)
	}
	// Plain JSON: markup is not \u-escaped, control characters are.
	for _, want := range []string{`"<b>&amp;</b>"`, `"a\rb"`, `"e\r\nf"`, `"nul\u0000byte"`, `"C:\\Users\\jmeter\\data.csv"`, `"emoji 🎉 café"`, `,"",`, `{"ok":true,"command":"EXPORT","lines":["a\rb","c\nd",`, `"last"]}` + "\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("EXPORT's JSON body lacks %s: %q", want, body)
		}
	}
	if _, byAccept := ts.exportJSON(t, "src", "Accept", "application/json"); byAccept != body {
		t.Errorf("EXPORT with Accept: application/json\n got %q\nwant %q", byAccept, body)
	}

	// LOAD takes the array back; MODE works as for a plain body.
	lines, err := json.Marshal(exported.Lines)
	if err != nil {
		t.Fatal(err)
	}
	answer, status := ts.loadJSON(t, "FILENAME=dst&MODE=REPLACE", "application/json", string(lines))
	if status != http.StatusOK || !answer.OK || answer.Length == nil || *answer.Length != int64(len(awkwardLines)) {
		t.Fatalf("LOAD in JSON: HTTP %d %+v", status, answer)
	}
	if got := ts.lines(t, "dst"); !slices.Equal(got, awkwardLines) {
		t.Errorf("after a JSON LOAD: %q, want %q", got, awkwardLines)
	}
	if _, again := ts.exportJSON(t, "dst"); again != body {
		t.Errorf("EXPORT of the loaded list\n got %q\nwant %q", again, body)
	}
	// The whole EXPORT answer's lines, piped as they are: "lines" is the body LOAD takes.
	ts.loadJSON(t, "FILENAME=dst&MODE=FIRST", "Application/JSON; charset=utf-8", `["first\r\n"]`)
	a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=dst&MODE=LAST", "application/json", ` [ "last\n" , "" ] `)
	if a.body != okBody("2") {
		t.Errorf("LOAD in JSON, answered in HTML: %q", a.body)
	}
	want := slices.Concat([]string{"first\r\n"}, awkwardLines, []string{"last\n", ""})
	if got := ts.lines(t, "dst"); !slices.Equal(got, want) {
		t.Errorf("after LOAD FIRST and LAST in JSON: %q, want %q", got, want)
	}

	// The plain EXPORT is what the original's SAVE writes: each line and "\n", CR and LF as they
	// are, so that a plain LOAD splits the lines that hold them (documented in README).
	plain := ts.do(t, http.MethodGet, "/sts/EXPORT?FILENAME=src", "", "")
	wantPlain := strings.Join(awkwardLines, "\n") + "\n"
	if plain.status != http.StatusOK || plain.body != wantPlain || plain.header.Get("Content-Type") != "text/plain; charset=UTF-8" {
		t.Errorf("plain EXPORT: HTTP %d %q\n got %q\nwant %q", plain.status, plain.header.Get("Content-Type"), plain.body, wantPlain)
	}
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=split", "text/plain", plain.body); a.body != okBody(strconv.Itoa(len(awkwardLines)+3)) {
		t.Errorf("plain LOAD of the plain EXPORT: %q, want three lines more", a.body)
	}
	wantSplit := []string{"a", "b", "c", "d", "e", "f"}
	if got := ts.lines(t, "split"); !slices.Equal(got[:6], wantSplit) || !slices.Equal(got[6:], awkwardLines[3:]) {
		t.Errorf("plain round trip: %q", got)
	}

	// An empty list is an empty array, not null nor an absent field.
	ts.loadJSON(t, "FILENAME=empty", "application/json", "[]")
	if empty, body := ts.exportJSON(t, "empty"); empty.Lines == nil || len(empty.Lines) != 0 || !strings.Contains(body, `"lines":[]`) {
		t.Errorf("EXPORT of an empty list: %q", body)
	}
	// HEAD sends the headers only.
	if a := ts.do(t, http.MethodHead, "/sts/EXPORT?FILENAME=src&FORMAT=JSON", "", ""); a.status != http.StatusOK || a.body != "" || a.header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD EXPORT in JSON: HTTP %d %q %q", a.status, a.header.Get("Content-Type"), a.body)
	}
	// A failed EXPORT is the usual JSON refusal.
	if a := ts.do(t, http.MethodGet, "/sts/EXPORT?FILENAME=nope&FORMAT=JSON", "", ""); a.status != http.StatusNotFound || !strings.Contains(a.body, `"reason":"not_loaded"`) {
		t.Errorf("EXPORT of no list in JSON: HTTP %d %q", a.status, a.body)
	}
}

// The JSON form is UTF-8 whatever the charsets: a line no ISO-8859-1 file could hold goes through.
func TestJSONExportLoadIgnoresFileCharsets(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.CharsetRead, c.CharsetWrite = "ISO-8859-1", "ISO-8859-1" })
	lines := []string{"emoji 🎉", "café", "x\ry"}
	body, _ := json.Marshal(lines)
	ts.loadJSON(t, "FILENAME=l", "application/json", string(body))
	if got, _ := ts.exportJSON(t, "l"); !slices.Equal(got.Lines, lines) {
		t.Errorf("JSON round trip with ISO-8859-1 files: %q, want %q", got.Lines, lines)
	}
	// SHA256 is the digest of the body as sent, reported for a REPLACE as for a plain one.
	sum := sha256.Sum256(body)
	answer, status := ts.loadJSON(t, "FILENAME=l&SHA256="+hex.EncodeToString(sum[:]), "application/json", string(body))
	if status != http.StatusOK || !answer.OK {
		t.Fatalf("LOAD in JSON with SHA256: HTTP %d %+v", status, answer)
	}
	if !strings.Contains(ts.do(t, http.MethodGet, "/sts/STATUS?FORMAT=JSON", "", "").body, hex.EncodeToString(sum[:])) {
		t.Error("STATUS does not report the JSON body's digest")
	}
}

// A JSON body that is not one array of strings in UTF-8 is refused (400 invalid_body, a message
// that says what is wrong) and changes nothing.
func TestJSONLoadMalformedChangesNothing(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxBodyBytes = 1000 })
	ts.addLines(t, "l", []string{"keep", "this"})
	for _, c := range []struct{ name, contentType, body, message string }{
		{"empty", "application/json", "", "JSON body is empty"},
		{"blank", "application/json", " \n", "JSON body is empty"},
		{"an object", "application/json", `{"lines":["a"]}`, "must be an array of strings, not an object"},
		{"a string", "application/json", `"a"`, "must be an array of strings, not a string"},
		{"null", "application/json", `null`, "must be an array of strings, not null"},
		{"a number element", "application/json", `["a", 1]`, "element 1 (byte 6) is a number"},
		{"a null element", "application/json", `["a",null]`, "element 1 (byte 5) is null"},
		{"a boolean element", "application/json", `[true]`, "element 0 (byte 1) is a boolean"},
		{"a nested array", "application/json", `["a",["b"]]`, "element 1 (byte 5) is an array"},
		{"a huge number", "application/json", `[1e999]`, "element 0 (byte 1) is a number"},
		{"truncated", "application/json", `["a","b"`, "it ends at byte 8, inside the array"},
		{"truncated string", "application/json", `["a","b`, "Invalid JSON body"},
		{"a trailing comma", "application/json", `["a",]`, "invalid character ']' looking for beginning of value at byte 5"},
		{"a bad escape", "application/json", `["a\x"]`, "invalid character 'x' in string escape code"},
		{"a raw newline in a string", "application/json", "[\"a\nb\"]", "invalid character '\\n' in string literal"},
		{"two arrays", "application/json", `["a"] ["b"]`, "something follows it at byte 6"},
		{"garbage after", "application/json", `["a"]x`, "something follows it"},
		{"a comma after", "application/json", "[\"a\"]\n,", "something follows it at byte 6"},
		{"a missing comma", "application/json", `["a" "b"]`, "Invalid JSON body: invalid character '\"' after array element at byte 5"},
		{"not UTF-8", "application/json", "[\"caf\xe9\"]", "not valid UTF-8 (at byte 5)"},
		{"another charset", "application/json; charset=ISO-8859-1", `["a"]`, "not charset=ISO-8859-1"},
		{"a plain text body", "application/json", "a\nb\n", "invalid character 'a' looking for beginning of value at byte 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			answer, status := ts.loadJSON(t, "FILENAME=l&MODE=REPLACE", c.contentType, c.body)
			if status != http.StatusBadRequest || answer.OK || answer.Command != "LOAD" || answer.Reason != protocol.ReasonInvalidBody ||
				!strings.Contains(answer.Error, c.message) {
				t.Errorf("HTTP %d %+v, want 400 invalid_body with %q", status, answer, c.message)
			}
			if got := ts.lines(t, "l"); !slices.Equal(got, []string{"keep", "this"}) {
				t.Errorf("the list after a refused LOAD: %q", got)
			}
		})
	}
	// In HTML, the original's KO (HTTP 200); into a new list, no list is created.
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=new&MODE=LAST", "application/json", `["a",2]`); a.status != http.StatusOK ||
		a.body != koBody("JSON body must be an array of strings: element 1 (byte 5) is a number !") {
		t.Errorf("a malformed JSON LOAD in HTML: HTTP %d %q", a.status, a.body)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=new", koBody("new not loaded yet !"))
	// The body limit is the same as for a plain LOAD.
	big, _ := json.Marshal([]string{strings.Repeat("x", 1000)})
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=l", "application/json", string(big), "Accept", "application/json"); a.status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(a.body, `"reason":"too_large"`) {
		t.Errorf("a JSON LOAD over --max-body-bytes: HTTP %d %q", a.status, a.body)
	}
	if got := ts.lines(t, "l"); !slices.Equal(got, []string{"keep", "this"}) {
		t.Errorf("the list after the refused LOADs: %q", got)
	}
}

// An unauthenticated JSON LOAD is refused unread, as every LOAD: the token is checked before the
// body, whatever its type.
func TestUnauthenticatedJSONLoadIsNotRead(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuthToken = "s3cret" })
	body, _ := json.Marshal([]string{strings.Repeat("x", 1<<20), "TOKEN=s3cret"})
	for _, c := range []struct {
		name, target, bearer string
		status, read         int
	}{
		{"no token", "/sts/LOAD?FILENAME=l&FORMAT=JSON", "", http.StatusUnauthorized, 0},
		{"a wrong token", "/sts/LOAD?FILENAME=l&FORMAT=JSON", "nope", http.StatusUnauthorized, 0},
		{"the token", "/sts/LOAD?FILENAME=l&FORMAT=JSON", "s3cret", http.StatusOK, len(body)},
	} {
		t.Run(c.name, func(t *testing.T) {
			counted := &countingBody{r: strings.NewReader(string(body))}
			r := httptest.NewRequest(http.MethodPost, c.target, counted)
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Type", "application/json")
			if c.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+c.bearer)
			}
			rec := httptest.NewRecorder()
			ts.srv.Handler().ServeHTTP(rec, r)
			if rec.Code != c.status || counted.read != c.read {
				t.Fatalf("HTTP %d %q, %d bytes read; want %d, %d", rec.Code, rec.Body.String(), counted.read, c.status, c.read)
			}
			if c.status == http.StatusUnauthorized {
				if !strings.Contains(rec.Body.String(), `"reason":"unauthorized"`) || rec.Header().Get("Connection") != "close" {
					t.Errorf("the refusal: %q %v", rec.Body.String(), rec.Header())
				}
				if _, err := ts.store.Lines(t.Context(), "l"); err == nil {
					t.Error("a refused LOAD created the list")
				}
			}
		})
	}
	if got := ts.lines(t, "l"); len(got) != 2 || got[1] != "TOKEN=s3cret" {
		t.Errorf("after the authorized JSON LOAD: %d lines", len(got))
	}
}
