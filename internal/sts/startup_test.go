package sts

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadAtStartupCommaList(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.InitFiles = " a.csv ,b.csv,,missing.csv,../x, a+b.csv" })
	writeFiles(t, ts.dir, map[string]string{"a.csv": "1\n2\n", "b.csv": "3\n", "a+b.csv": "literal\n"})
	ts.srv.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\na+b.csv = 1<br />\na.csv = 2<br />\nb.csv = 1<br />\n</body></html>")
	log := ts.log.String()
	for _, want := range []string{
		`msg="Loaded list" list=a.csv lines=2`,
		`msg="Loaded list" list=b.csv lines=1`,
		`msg="Could not load list" list="" source=initFileAtStartup error=". (Is a directory)"`,
		`msg="Could not load list" list=missing.csv source=initFileAtStartup error="file not found !"`,
		`msg="Could not load list" list=../x source=initFileAtStartup error="Illegal character found !"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, ts.dir+" ") || strings.Contains(log, "error="+ts.dir) {
		t.Errorf("an error shows the absolute dataset path:\n%s", log)
	}
}

func TestLoadAtStartupRegex(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.InitFiles = `data\d\.csv|dir\.csv`
		c.InitFilesRegex = true
	})
	writeFiles(t, ts.dir, map[string]string{"data1.csv": "a\n", "data2.csv": "b\nc\n", "data10.csv": "x\n", "xdata3.csv": "y\n"})
	if err := os.Mkdir(filepath.Join(ts.dir, "dir.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts.srv.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\ndata1.csv = 1<br />\ndata2.csv = 2<br />\n</body></html>")
	if log := ts.log.String(); !strings.Contains(log, `list=dir.csv source=initFileAtStartup error="dir.csv (Is a directory)"`) {
		t.Errorf("the directory's failure is not logged:\n%s", log)
	}
}

func TestLoadAtStartupExtensions(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"users.txt": "u1\r\nu2\r\n", "skip.bin": "z\n", "real.txt": "r\n"})
	if err := os.Symlink(filepath.Join(src, "real.txt"), filepath.Join(src, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "sub.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere.data")
	if err := os.WriteFile(other, []byte("e1\ne2\ne3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) {
		c.InitFiles = "init.csv"
		c.LoadDirs = []LoadDir{{Dir: src, Match: `.*\.txt`}, {Dir: filepath.Join(src, "nope"), Match: ".*"}, {Dir: src, Match: "("}}
		c.Loads = []Load{{List: "emails", Path: other}, {List: "users.txt", Path: other}, {List: "gone", Path: other + ".missing"}}
	})
	writeFiles(t, ts.dir, map[string]string{"init.csv": "i\n"})
	ts.srv.LoadAtStartup(context.Background())
	want := map[string][]string{
		"init.csv":  {"i"},
		"link.txt":  {"r"},
		"real.txt":  {"r"},
		"users.txt": {"e1", "e2", "e3"}, // Loads come after LoadDirs and replace the list
		"emails":    {"e1", "e2", "e3"},
	}
	for name, lines := range want {
		if got := ts.lines(t, name); !slices.Equal(got, lines) {
			t.Errorf("list %s: %q, want %q", name, got, lines)
		}
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=sub.txt", koBody("sub.txt not loaded yet !"))
	ts.expect(t, "/sts/LENGTH?FILENAME=skip.bin", koBody("skip.bin not loaded yet !"))
	log := ts.log.String()
	for _, want := range []string{`msg="Loaded list" list=users.txt lines=2`, `msg="Loaded list" list=emails lines=3`,
		`msg="Could not load list" list=gone`, `msg="Could not load directory"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if strings.Count(log, `msg="Could not load directory"`) != 2 {
		t.Errorf("a missing directory and a bad regex should each be logged:\n%s", log)
	}
	// STATUS's JSON form says which loads failed and why, so that the operator can tell the user.
	var status protocol.Answer
	if err := json.Unmarshal([]byte(ts.do(t, http.MethodGet, "/sts/STATUS?FORMAT=JSON", "", "").body), &status); err != nil {
		t.Fatal(err)
	}
	_, regexErr := javaregex.Compile("(", time.Second)
	var failed []string
	for _, f := range status.LoadFailures {
		failed = append(failed, f.List+" from "+strings.TrimPrefix(f.Source, src)+": "+f.Error)
	}
	wantFailed := []string{
		" from /nope=.*: open " + src + "/nope: no such file or directory",
		" from =(: " + regexErr.Error(),
		"gone from " + other + ".missing: file not found !",
	}
	if !slices.Equal(failed, wantFailed) {
		t.Errorf("loadFailures:\n%q\nwant\n%q", failed, wantFailed)
	}
}

func TestStatusWithoutLoadFailures(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.InitFiles = "a.csv" })
	ts.writeFile(t, "a.csv", "1\n")
	ts.srv.LoadAtStartup(context.Background())
	// An init file is a startup source like --load: STATUS names the digest of what it loaded.
	want := `{"ok":true,"command":"STATUS","lists":[{"name":"a.csv","length":1,"loadedSha256":"4355a46b19d348dc2f57c046f8ef63d4538ebb936000f3c9ee954a27460dd865"}],"total":1}` + "\n"
	if got := ts.do(t, http.MethodGet, "/sts/STATUS?FORMAT=JSON", "", "").body; got != want {
		t.Errorf("STATUS after a clean start: %q, want %q", got, want)
	}
}

// A file whose name no client could address as a list (longer than --max-name-bytes, or holding a
// control character, which would forge a STATUS row) is not loaded at startup, and says why.
func TestLoadAtStartupRefusesNamesTheProtocolRefuses(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("n", 21) + ".csv"
	writeFiles(t, dir, map[string]string{"ok.csv": "1\n", long: "2\n", "a\nb.csv": "3\n"})
	ts := startServer(t, func(c *Config) {
		c.MaxNameBytes = 24
		c.LoadDirs = []LoadDir{{Dir: dir, Match: `(?s).*\.csv`}} // (?s): a dot matches the newline too
	})
	ts.srv.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\nok.csv = 1<br />\n</body></html>")
	log := ts.log.String()
	for _, want := range []string{
		`msg="Could not load list" list=` + long + ` source=` + filepath.Join(dir, long) + ` error="Limit exceeded: max-name-bytes=24 !"`,
		`msg="Could not load list" list="a\nb.csv"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
}
