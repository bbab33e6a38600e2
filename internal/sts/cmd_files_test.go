package sts

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
)

func TestInitFileNames(t *testing.T) {
	ts := startServer(t)
	ts.expect(t, "/sts/INITFILE", koBody("FILENAME parameter was missing !"))
	for _, name := range []string{"a%2Fb", "a%5Cb", "a:b", ".", "..", "..%2F..%2Fetc%2Fpasswd", strings.Repeat("x", 200) + "%2F"} {
		ts.expect(t, "/sts/INITFILE?FILENAME="+name, koBody("Illegal character found !"))
	}
	name128, name129 := strings.Repeat("n", 128), strings.Repeat("n", 129)
	ts.writeFile(t, name128, "x\n")
	ts.writeFile(t, name129, "x\n")
	ts.expect(t, "/sts/INITFILE?FILENAME="+name128, okBody("1"))
	ts.expect(t, "/sts/INITFILE?FILENAME="+name129, koBody("Maximum size reached (128) !"))

	for file, query := range map[string]string{"...": "...", "with space": "with+space", "a b": "a%20b",
		"semi;colon": "semi;colon", "star*": "star*", "q?": "q%3F", "<lt": "%3Clt", " leading": "%20leading", "a+b": "a%2Bb"} {
		ts.writeFile(t, file, "line of "+file)
		ts.expect(t, "/sts/INITFILE?FILENAME="+query, okBody("1"))
		ts.expect(t, "/sts/READ?FILENAME="+query, okBody("line of "+file))
	}
}

func TestInitFileErrors(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "a.txt", "one", "two")
	if err := os.Remove(filepath.Join(ts.dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	ts.expect(t, "/sts/INITFILE?FILENAME=a.txt", koBody("file not found !"))
	ts.expect(t, "/sts/LENGTH?FILENAME=a.txt", okBody("2")) // the list is kept
	// A control character is refused before any file is looked for.
	ts.expect(t, "/sts/INITFILE?FILENAME=a%00b", koBody("Illegal character found !"))

	if err := os.Mkdir(filepath.Join(ts.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// No absolute path: the path is relative to the dataset directory.
	ts.expect(t, "/sts/INITFILE?FILENAME=adir", koBody("adir (Is a directory)"))
	ts.expect(t, "/sts/INITFILE?FILENAME=", koBody(". (Is a directory)"))
	ts.expect(t, "/sts/INITFILE?FILENAME", koBody(". (Is a directory)"))
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\na.txt = 2<br />\n</body></html>")
}

func TestInitFileLines(t *testing.T) {
	ts := startServer(t)
	tests := map[string]struct {
		content string
		want    []string
	}{
		"crlf":             {"one\r\ntwo\r\nthree", []string{"one", "two", "three"}},
		"lone cr":          {"x\ry\rz\r", []string{"x", "y", "z"}},
		"mixed":            {"a\r\n\r\nb\n\nc\r", []string{"a", "", "b", "", "c"}},
		"empty lines kept": {"\n\nx\n\n", []string{"", "", "x", ""}},
		"empty file":       {"", nil},
		"one empty line":   {"\n", []string{""}},
		"no trimming":      {" \tx\t \n", []string{" \tx\t "}},
		"bom kept":         {"\xef\xbb\xbffirst\nsecond", []string{"\ufefffirst", "second"}},
		"invalid bytes":    {"caf\xe9;na\xefve", []string{"caf\ufffd;na\ufffdve"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			file := strings.ReplaceAll(name, " ", "_")
			ts.writeFile(t, file, tt.content)
			ts.expect(t, "/sts/INITFILE?FILENAME="+file, okBody(strconv.Itoa(len(tt.want))))
			if got := ts.lines(t, file); !slices.Equal(got, tt.want) {
				t.Errorf("lines %q, want %q", got, tt.want)
			}
		})
	}
	// INITFILE replaces the list.
	ts.writeFile(t, "r.txt", "a\nb\n")
	ts.get(t, "/sts/INITFILE?FILENAME=r.txt")
	ts.get(t, "/sts/ADD?FILENAME=r.txt&LINE=c")
	ts.get(t, "/sts/INITFILE?FILENAME=r.txt")
	if got := ts.lines(t, "r.txt"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("re-INITFILE: %q", got)
	}
}

// fixedClock makes SAVE's timestamp 2026-11-29 22:51:35 local time.
func fixedClock(ts *testServer) string {
	ts.srv.now = func() time.Time { return time.Date(2026, 11, 29, 22, 51, 35, 0, time.Local) }
	return "20261129T22h51m35s."
}

func (ts *testServer) readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ts.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSave(t *testing.T) {
	ts := startServer(t)
	prefix := fixedClock(ts)
	ts.expect(t, "/sts/SAVE", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/SAVE?FILENAME=..%2Fx", koBody("Illegal character found !"))
	ts.expect(t, "/sts/SAVE?FILENAME="+strings.Repeat("n", 129), koBody("Maximum size reached (128) !"))
	ts.expect(t, "/sts/SAVE?FILENAME=unknown", koBody("LinkedList not found !"))

	ts.writeFile(t, "d.txt", "one\r\ntwo\r\n")
	ts.get(t, "/sts/INITFILE?FILENAME=d.txt")
	ts.get(t, "/sts/ADD?FILENAME=d.txt&LINE=multi%0Aline&ADD_MODE=LAST")
	// Default from the configuration: with a timestamp.
	ts.expect(t, "/sts/SAVE?FILENAME=d.txt", okBody("3"))
	if got := ts.readFile(t, prefix+"d.txt"); got != "one\ntwo\nmulti\nline\n" {
		t.Errorf("timestamped file %q", got)
	}
	for _, flag := range []string{"TRUE", "True", "true"} {
		_ = os.Remove(filepath.Join(ts.dir, prefix+"d.txt"))
		ts.expect(t, "/sts/SAVE?FILENAME=d.txt&ADD_TIMESTAMP="+flag, okBody("3"))
		ts.readFile(t, prefix+"d.txt")
	}
	// Anything but "true" means false, the empty string included: the source is overwritten.
	for _, flag := range []string{"FALSE", "yes", "1", ""} {
		ts.writeFile(t, "d.txt", "old")
		ts.expect(t, "/sts/SAVE?FILENAME=d.txt&ADD_TIMESTAMP="+flag, okBody("3"))
		if got := ts.readFile(t, "d.txt"); got != "one\ntwo\nmulti\nline\n" {
			t.Errorf("ADD_TIMESTAMP=%s: file %q", flag, got)
		}
	}
	// A 128-character name plus the prefix is fine; an empty list makes an empty file.
	long := strings.Repeat("n", 128)
	ts.get(t, "/sts/ADD?FILENAME="+long+"&LINE=x")
	ts.get(t, "/sts/RESET?FILENAME="+long)
	ts.expect(t, "/sts/SAVE?FILENAME="+long, okBody("0"))
	if got := ts.readFile(t, prefix+long); got != "" {
		t.Errorf("empty list saved as %q", got)
	}
}

func TestSaveErrors(t *testing.T) {
	ts := startServer(t)
	prefix := fixedClock(ts)
	if err := os.Mkdir(filepath.Join(ts.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts.get(t, "/sts/ADD?FILENAME=adir&LINE=x")
	ts.expect(t, "/sts/SAVE?FILENAME=adir&ADD_TIMESTAMP=false", koBody("adir (Is a directory)"))
	ts.get(t, "/sts/ADD?FILENAME=&LINE=x")
	ts.expect(t, "/sts/SAVE?FILENAME=&ADD_TIMESTAMP=false", koBody(". (Is a directory)"))
	ts.expect(t, "/sts/SAVE?FILENAME=", okBody("1"))
	if got := ts.readFile(t, prefix); got != "x\n" {
		t.Errorf("empty key with timestamp saved %q", got)
	}
	// A control character is refused before any file is written.
	ts.expect(t, "/sts/SAVE?FILENAME=a%00b&ADD_TIMESTAMP=false", koBody("Illegal character found !"))
}

func TestSaveDefaultWithoutTimestamp(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AddTimestamp = false })
	ts.get(t, "/sts/ADD?FILENAME=s.txt&LINE=x")
	ts.expect(t, "/sts/SAVE?FILENAME=s.txt", okBody("1"))
	if got := ts.readFile(t, "s.txt"); got != "x\n" {
		t.Errorf("saved %q", got)
	}
	prefix := fixedClock(ts)
	ts.expect(t, "/sts/SAVE?FILENAME=s.txt&ADD_TIMESTAMP=TRUE", okBody("1"))
	ts.readFile(t, prefix+"s.txt")
}

func TestCharsets(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.CharsetRead, c.CharsetWrite, c.CharsetResponse = "ISO-8859-1", "ISO-8859-1", "ISO-8859-1"
		c.AddTimestamp = false
	})
	ts.writeFile(t, "l.txt", "caf\xe9\n")
	a := ts.do(t, http.MethodGet, "/sts/INITFILE?FILENAME=l.txt", "", "")
	ts.checkCommandAnswer(t, "INITFILE", a)
	if got := ts.lines(t, "l.txt"); !slices.Equal(got, []string{"café"}) {
		t.Errorf("read as ISO-8859-1: %q", got)
	}
	// The body is encoded in the charset the header declares.
	a = ts.do(t, http.MethodGet, "/sts/READ?FILENAME=l.txt", "", "")
	if a.body != okBody("caf\xe9") {
		t.Errorf("ISO-8859-1 body %q", a.body)
	}
	ts.get(t, "/sts/ADD?FILENAME=l.txt&LINE=na%C3%AFve&ADD_MODE=LAST")
	ts.expect(t, "/sts/SAVE?FILENAME=l.txt", okBody("2"))
	if got := ts.readFile(t, "l.txt"); got != "caf\xe9\nna\xefve\n" {
		t.Errorf("written as ISO-8859-1: %q", got)
	}
}

func TestUnknownCharset(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CharsetResponse = "NO-SUCH-CHARSET"
	if _, err := NewServer(cfg, memory.New(), slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("NewServer accepted an unknown charset")
	}
}

func TestLoad(t *testing.T) {
	ts := startServer(t)
	post := func(target, body string) string {
		a := ts.do(t, http.MethodPost, target, "text/plain", body)
		ts.checkCommandAnswer(t, target, a)
		return a.body
	}
	if got := post("/sts/LOAD?MODE=LAST", "a"); got != koBody("FILENAME parameter was missing !") {
		t.Errorf("LOAD without FILENAME: %q", got)
	}
	if got := post("/sts/LOAD?FILENAME=l&MODE=last", "a"); got != koBody("MODE value has to be REPLACE, FIRST or LAST !") {
		t.Errorf("LOAD bad mode: %q", got)
	}
	if got := post("/sts/LOAD?FILENAME=l", "b\r\nc\rd\n"); got != okBody("3") {
		t.Errorf("LOAD: %q", got)
	}
	post("/sts/LOAD?FILENAME=l&MODE=FIRST", "x\ny")
	post("/sts/LOAD?FILENAME=l&MODE=LAST", "FILENAME=z&TOKEN=w\n")
	want := []string{"x", "y", "b", "c", "d", "FILENAME=z&TOKEN=w"}
	if got := ts.lines(t, "l"); !slices.Equal(got, want) {
		t.Errorf("after LOADs: %q, want %q", got, want)
	}
	post("/sts/LOAD?FILENAME=l&MODE=REPLACE", "only")
	if got := ts.lines(t, "l"); !slices.Equal(got, []string{"only"}) {
		t.Errorf("after LOAD REPLACE: %q", got)
	}
	post("/sts/LOAD?FILENAME=e&MODE=LAST", "")
	ts.expect(t, "/sts/LENGTH?FILENAME=e", okBody("0"))
	// LOAD is POST only: the original never had it.
	ts.expect(t, "/sts/LOAD?FILENAME=l", koBody("unknown command !"))
}

func TestExport(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.CharsetWrite = "ISO-8859-1" })
	ts.expect(t, "/sts/EXPORT", koBody("FILENAME parameter was missing !"))
	ts.expect(t, "/sts/EXPORT?FILENAME=nope", koBody("nope not loaded yet !"))
	ts.loadList(t, "e.txt", "one", "", "café")
	for range 2 { // nothing is consumed
		a := ts.do(t, http.MethodGet, "/sts/EXPORT?FILENAME=e.txt", "", "")
		if a.status != http.StatusOK || a.body != "one\n\ncaf\xe9\n" || a.header.Get("Content-Type") != "text/plain; charset=ISO-8859-1" {
			t.Errorf("EXPORT: %d %q %q", a.status, a.header.Get("Content-Type"), a.body)
		}
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=e.txt", okBody("3"))
	if a := ts.do(t, http.MethodPost, "/sts/EXPORT?FILENAME=e.txt", "", ""); a.body != koBody("unknown command !") {
		t.Errorf("POST EXPORT: %q", a.body)
	}
}

func TestSaveThroughSymbolicLinks(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AddTimestamp = false })
	outside := t.TempDir()
	link := func(name, target string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(ts.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(ts.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("dangling.csv", "sub/new.csv")                         // dangling, inside
	link("chain.csv", "dangling2.csv")                          // a chain to a dangling link, inside
	link("dangling2.csv", filepath.Join(ts.dir, "created.csv")) // absolute, inside
	link("away.csv", filepath.Join(outside, "nonexist.csv"))    // dangling, outside
	link("escape.csv", "../"+filepath.Base(outside)+"/x.csv")   // dangling, relative, outside
	if err := os.WriteFile(filepath.Join(outside, "exists.csv"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link("existing.csv", filepath.Join(outside, "exists.csv")) // an existing file, outside

	for _, name := range []string{"dangling.csv", "chain.csv", "away.csv", "escape.csv", "existing.csv"} {
		ts.get(t, "/sts/ADD?FILENAME="+name+"&LINE="+name)
	}
	// Java's FileOutputStream follows a link and creates its target: so do we, inside the
	// dataset directory.
	ts.expect(t, "/sts/SAVE?FILENAME=dangling.csv", okBody("1"))
	if got := ts.readFile(t, "sub/new.csv"); got != "dangling.csv\n" {
		t.Errorf("through a dangling link: %q", got)
	}
	ts.expect(t, "/sts/SAVE?FILENAME=chain.csv", okBody("1"))
	if got := ts.readFile(t, "created.csv"); got != "chain.csv\n" {
		t.Errorf("through a chain of links: %q", got)
	}
	for _, name := range []string{"dangling.csv", "chain.csv", "dangling2.csv"} {
		if info, err := os.Lstat(filepath.Join(ts.dir, name)); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", name, err)
		}
	}
	// A dangling link does not create a file outside it.
	for _, name := range []string{"away.csv", "escape.csv"} {
		ts.expect(t, "/sts/SAVE?FILENAME="+name, koBody(name+" (Dangling link leads outside the dataset directory)"))
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files were created outside the dataset directory: %v", entries)
	}
	// A link to an existing file outside is refused too (the original wrote through it): SAVE never
	// writes outside the dataset directory, where the journal may be.
	ts.expect(t, "/sts/SAVE?FILENAME=existing.csv", koBody("existing.csv (Link leads outside the dataset directory)"))
	if b, err := os.ReadFile(filepath.Join(outside, "exists.csv")); err != nil || string(b) != "old\n" {
		t.Errorf("through a link to an existing file outside: %q %v", b, err)
	}
}

// The state directory's name in the dataset directory is out of INITFILE's and SAVE's reach;
// a SAVE with a timestamp writes another name, and other names are not affected.
func TestTheStateDirectoryNameIsReserved(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.ReservedName = "state" })
	ts.expect(t, "/sts/ADD?FILENAME=state&LINE=x", okBody(""))
	ts.expect(t, "/sts/SAVE?FILENAME=state&ADD_TIMESTAMP=false", koBody("Name reserved for the server's state !"))
	ts.expect(t, "/sts/INITFILE?FILENAME=state", koBody("Name reserved for the server's state !"))
	if _, err := os.Stat(filepath.Join(ts.dir, "state")); !os.IsNotExist(err) {
		t.Errorf("SAVE wrote the reserved name: %v", err)
	}
	ts.expect(t, "/sts/SAVE?FILENAME=state&ADD_TIMESTAMP=true", okBody("1"))
	ts.expect(t, "/sts/ADD?FILENAME=other&LINE=y", okBody(""))
	ts.expect(t, "/sts/SAVE?FILENAME=other&ADD_TIMESTAMP=false", okBody("1"))
}
