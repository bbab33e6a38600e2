package sts

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// nameCommands are the commands that take FILENAME, each as a request with the name's place
// left as %s.
var nameCommands = []struct{ method, target, body string }{
	{http.MethodGet, "/sts/INITFILE?FILENAME=%s", ""},
	{http.MethodGet, "/sts/READ?FILENAME=%s", ""},
	{http.MethodGet, "/sts/READMULTI?FILENAME=%s&NB_LINES=1", ""},
	{http.MethodGet, "/sts/ADD?FILENAME=%s&LINE=x", ""},
	{http.MethodGet, "/sts/FIND?FILENAME=%s&LINE=x", ""},
	{http.MethodGet, "/sts/LENGTH?FILENAME=%s", ""},
	{http.MethodGet, "/sts/SAVE?FILENAME=%s", ""},
	{http.MethodGet, "/sts/RESET?FILENAME=%s", ""},
	{http.MethodPost, "/sts/LOAD?FILENAME=%s", "x\n"},
	{http.MethodGet, "/sts/EXPORT?FILENAME=%s", ""},
}

func isFileCommand(target string) bool {
	return strings.HasPrefix(target, "/sts/INITFILE") || strings.HasPrefix(target, "/sts/SAVE")
}

// A FILENAME longer than --max-name-bytes (1024 by default) is refused by every command with a
// KO naming the limit (JSON: 413, limit_exceeded), and creates nothing; INITFILE and SAVE keep
// the original's own, shorter, limit and message.
func TestListNameLongerThanTheLimitIsRefused(t *testing.T) {
	ts := startServer(t)
	ok, long := strings.Repeat("n", 1024), strings.Repeat("n", 1025)
	ts.expect(t, "/sts/ADD?FILENAME="+ok+"&LINE=x", okBody(""))
	for _, c := range nameCommands {
		target := fmt.Sprintf(c.target, long)
		want := "Limit exceeded: max-name-bytes=1024 !"
		if isFileCommand(target) {
			want = "Maximum size reached (128) !"
		}
		if a := ts.do(t, c.method, target, "text/plain", c.body); a.body != koBody(want) {
			t.Errorf("%s %.40s...: %q, want KO %q", c.method, target, a.body, want)
		}
		if isFileCommand(target) {
			continue
		}
		a := ts.do(t, c.method, target+"&FORMAT=JSON", "text/plain", c.body)
		if a.status != http.StatusRequestEntityTooLarge || !strings.Contains(a.body, `"reason":"limit_exceeded"`) {
			t.Errorf("%s %.40s... (JSON): %d %s", c.method, target, a.status, a.body)
		}
	}
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\n"+ok+" = 1<br />\n</body></html>")

	small := startServer(t, func(c *Config) { c.MaxNameBytes = 3 })
	small.expect(t, "/sts/ADD?FILENAME=%C3%A9t&LINE=x", okBody(""))                                         // 3 bytes
	small.expect(t, "/sts/ADD?FILENAME=%C3%A9t%C3%A9&LINE=x", koBody("Limit exceeded: max-name-bytes=3 !")) // 5 bytes
}

// A command that would create list number --max-lists + 1 is refused with a KO (JSON: 507,
// limit_exceeded), like the store's other limits; the lists already there keep working.
func TestListCountOverTheLimitIsRefused(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Limits.MaxLists = 2 })
	ts.expect(t, "/sts/ADD?FILENAME=a&LINE=1", okBody(""))
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=b", "text/plain", "1\n2\n"); a.body != okBody("2") {
		t.Fatalf("LOAD of the second list: %q", a.body)
	}
	full := koBody("Limit exceeded: max-lists=2 !")
	ts.expect(t, "/sts/ADD?FILENAME=c&LINE=1", full)
	ts.expect(t, "/sts/ADD?FILENAME=c&LINE=1&ADD_MODE=bad", full) // ADD creates its list before checking ADD_MODE
	ts.writeFile(t, "c", "1\n")
	ts.expect(t, "/sts/INITFILE?FILENAME=c", full)
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=c&MODE=LAST", "text/plain", "1\n"); a.body != full {
		t.Errorf("LOAD of a third list: %q", a.body)
	}
	if status, m := ts.getJSON(t, "/sts/ADD?FILENAME=c&LINE=1", true); status != http.StatusInsufficientStorage || m["reason"] != "limit_exceeded" {
		t.Errorf("JSON, one list too many: %d %v", status, m)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=c", koBody("c not loaded yet !"))
	ts.expect(t, "/sts/ADD?FILENAME=a&LINE=2&ADD_MODE=LAST", okBody(""))
	ts.expect(t, "/sts/READ?FILENAME=b&KEEP=FALSE", okBody("1"))
	ts.expect(t, "/sts/INITFILE?FILENAME=c", full)
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\na = 2<br />\nb = 1<br />\n</body></html>")
}

// A FILENAME holding a control character (CR, LF, tab, NUL, any below U+0020, DEL) is refused by
// every command with a KO (JSON 400: invalid_parameter, or illegal_name for INITFILE and SAVE),
// so that no list name can forge a row of STATUS.
func TestListNameWithControlCharactersIsRefused(t *testing.T) {
	ts := startServer(t)
	for _, ctl := range []string{"%00", "%01", "%09", "%0A", "%0D", "%1F", "%7F", "%0D%0A"} {
		for _, c := range nameCommands {
			target := fmt.Sprintf(c.target, "a"+ctl+"b")
			want, reason := "FILENAME must not hold control characters !", "invalid_parameter"
			if isFileCommand(target) {
				want, reason = "Illegal character found !", "illegal_name"
			}
			if a := ts.do(t, c.method, target, "text/plain", c.body); a.body != koBody(want) {
				t.Errorf("%s %s: %q, want KO %q", c.method, target, a.body, want)
			}
			a := ts.do(t, c.method, target+"&FORMAT=JSON", "text/plain", c.body)
			if a.status != http.StatusBadRequest || !strings.Contains(a.body, `"reason":"`+reason+`"`) {
				t.Errorf("%s %s (JSON): %d %s, want 400 %s", c.method, target, a.status, a.body, reason)
			}
		}
	}
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !"))

	// The forgery: a name holding "<br />\n" and a row of its own.
	ts.expect(t, "/sts/ADD?FILENAME=real%3Cbr+%2F%3E%0Aforged+%3D+999&LINE=x", koBody("FILENAME must not hold control characters !"))
	// Without a newline, the markup is escaped: one row per list whatever the name.
	ts.expect(t, "/sts/ADD?FILENAME=x+%3D+99%3Cbr+%2F%3Ey&LINE=x", okBody(""))
	// A name that came in some other way (a startup file, an older journal) is escaped too.
	if err := ts.store.Ensure(context.Background(), "p\nq = 5"); err != nil {
		t.Fatal(err)
	}
	status := ts.get(t, "/sts/STATUS")
	if want := "<html><title>OK</title>\n<body>\np&#10;q = 5 = 0<br />\nx = 99&lt;br /&gt;y = 1<br />\n</body></html>"; status != want {
		t.Errorf("STATUS\n got %q\nwant %q", status, want)
	}
	if rows := strings.Count(status, "<br />"); rows != 2 {
		t.Errorf("STATUS has %d rows for 2 lists: %q", rows, status)
	}
}

// FILENAME and every parameter a KO echoes come back HTML-escaped in the HTML form (reflected
// XSS), and as they were in the JSON form; HTML answers forbid a browser to run anything.
func TestHTMLAnswersEscapeWhatTheyEcho(t *testing.T) {
	ts := startServer(t)
	const xss = "%3Cscript%3Ealert(1)%3C%2Fscript%3E"
	a := ts.do(t, http.MethodGet, "/sts/LENGTH?FILENAME="+xss, "", "")
	if want := koBody("&lt;script&gt;alert(1)&lt;/script&gt; not loaded yet !"); a.body != want {
		t.Errorf("LENGTH of <script>: %q, want %q", a.body, want)
	}
	if csp := a.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || a.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("HTML answer headers: %v", a.header)
	}
	status, m := ts.getJSON(t, "/sts/LENGTH?FILENAME="+xss+"&FORMAT=JSON", false)
	if status != http.StatusNotFound || m["error"] != "<script>alert(1)</script> not loaded yet !" {
		t.Errorf("JSON LENGTH of <script>: %d %v", status, m)
	}
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=x", okBody(""))
	ts.expect(t, "/sts/READMULTI?FILENAME=l&NB_LINES="+xss, koBody("Can't parse integer parameter NB_LINES : &lt;script&gt;alert(1)&lt;/script&gt; !"))
	ts.expect(t, "/sts/READ?FILENAME=l&WAIT=%3Cb%3E&amp", koBody("WAIT value has to be a number of milliseconds from 0 to 2147483647 !"))
	// A malformed escape is echoed by the parser's KO: escaped too.
	if a := ts.rawGet(t, "/sts/READ?FILENAME=%3Cb%3E%zz"); strings.Contains(a.body, "<b>") {
		t.Errorf("a malformed request echoed markup: %q", a.body)
	}
}

// CONFIG shows the dataset directory as it was given, relative when relative: never a path the
// server resolved.
func TestConfigShowsTheDatasetDirectoryAsGiven(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, t.TempDir())
	if err != nil || filepath.IsAbs(rel) {
		testutil.Skip(t, "no relative path to a temporary directory: %q %v", rel, err)
	}
	ts := startServer(t, func(c *Config) { c.DatasetDir = rel })
	if got := ts.get(t, "/sts/CONFIG"); !strings.Contains(got, "jmeterPlugin.sts.datasetDirectory="+rel+"<br />\n") {
		t.Errorf("CONFIG does not show %q as given: %q", rel, got)
	}
	_, m := ts.getJSON(t, "/sts/CONFIG?FORMAT=JSON", false)
	if cfg, _ := m["config"].(map[string]any); cfg["jmeterPlugin.sts.datasetDirectory"] != rel {
		t.Errorf("CONFIG (JSON): %v", m["config"])
	}
}

// With 10 000 lists of 1 KiB names, the most the default limits allow, STATUS and /metrics stay
// bounded: STATUS lists them all (the protocol) in about 10 MiB, /metrics shows
// --metrics-max-lists of them and sums the others. The figures are logged.
func TestStatusAndMetricsSizeAtTheLimits(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	name := func(i int) string { return fmt.Sprintf("%05d", i) + strings.Repeat("n", 1019) }
	for i := range 10000 {
		if err := ts.store.Ensure(ctx, name(i)); err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
	}
	ts.expect(t, "/sts/ADD?FILENAME="+name(10000)+"&LINE=x", koBody("Limit exceeded: max-lists=10000 !"))
	ts.expect(t, "/sts/ADD?FILENAME="+name(9999)+"&LINE=x", okBody(""))
	html := ts.get(t, "/sts/STATUS")
	js := ts.do(t, http.MethodGet, "/sts/STATUS?FORMAT=JSON", "", "").body
	metrics := ts.do(t, http.MethodGet, "/metrics", "", "").body
	t.Logf("10000 lists of 1 KiB names: STATUS %d bytes (HTML), %d bytes (JSON); /metrics %d bytes, %d lists with a series of their own",
		len(html), len(js), len(metrics), strings.Count(metrics, "sts_list_lines{"))
	if rows := strings.Count(html, "<br />"); rows != 10000 {
		t.Errorf("STATUS has %d rows, want 10000", rows)
	}
	if len(html) > 10000*(1024+16)+100 || len(js) > 10000*(1024+40)+100 {
		t.Errorf("STATUS over its bound: %d bytes (HTML), %d (JSON)", len(html), len(js))
	}
	if series := strings.Count(metrics, "sts_list_lines{"); series != DefaultMetricsMaxLists || len(metrics) > 1<<20 {
		t.Errorf("/metrics: %d bytes, %d per-list series, want %d", len(metrics), series, DefaultMetricsMaxLists)
	}
	if !strings.Contains(metrics, "sts_other_lists 9900\n") {
		t.Errorf("/metrics does not sum the lists beyond the cap: %q", grepLines(metrics, "sts_other_lists"))
	}
}

func grepLines(text, prefix string) []string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}
