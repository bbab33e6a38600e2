package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// binary is the sts command, built once by TestMain: with the race detector under go test
// -race (make test), so that a data race in the server fails the test that ran it
// (stsproc.Build, stsproc.Start).
var binary string

// binDir holds the binaries TestMain and binaryWithoutRace build.
var binDir string

// binaryWithoutRace is the sts command built without the race detector, for the tests that
// measure the server's memory (RSS): the race detector multiplies it 5 to 10 times. Built on
// first use; the same as binary when the tests run without -race.
var binaryWithoutRace = sync.OnceValues(func() (string, error) {
	if !stsproc.Race {
		return binary, nil
	}
	out := filepath.Join(binDir, "sts-norace")
	return out, stsproc.BuildWithoutRace(".", out)
})

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sts-bin-")
	if err != nil {
		panic(err)
	}
	binDir, binary = dir, filepath.Join(dir, "sts")
	if err := stsproc.Build(".", binary); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBinaryServesAndStopsOnSIGTERM(t *testing.T) {

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte("u1;p1\r\nu2;p2\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := launch(t, stsproc.FreePort(t), "--dataset-dir", dir, "--init-files", "users.csv,missing.csv", "--add-timestamp=false")
	p.WaitReady(t)
	base, logs := p.Base, p.Logs
	if got, want := getBody(t, base+"/sts/READ?FILENAME=users.csv&KEEP=FALSE"), testutil.OKBody("u1;p1"); got != want {
		t.Errorf("READ: %q", got)
	}
	if got := getBody(t, base+"/sts/SAVE?FILENAME=users.csv"); got != testutil.OKBody("1") {
		t.Errorf("SAVE: %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "users.csv")); string(b) != "u2;p2\n" {
		t.Errorf("saved file %q", b)
	}
	if got := getBody(t, base+"/sts/CONFIG"); !strings.Contains(got, "jmeterPlugin.sts.addTimestamp=false<br />") {
		t.Errorf("CONFIG: %q", got)
	}
	p.Signal(t, syscall.SIGTERM)
	if code := p.ExitCode(t, 15*time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM\n%s", code, logs.String())
	}
	for _, want := range []string{`msg="Loaded list" list=users.csv lines=2`, `msg="Could not load list" list=missing.csv`, `msg=Stopping signal=terminated`, `msg=Stopped`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); err == nil {
		t.Error("the port is still open after exit")
	}
}

func TestBinaryStopsOnSTOP(t *testing.T) {

	p := launch(t, stsproc.FreePort(t), "--dataset-dir", t.TempDir(), "--log-format", "json")
	p.WaitReady(t)
	base, logs := p.Base, p.Logs
	if got := getBody(t, base+"/sts/STOP"); got != testutil.OKBody("") {
		t.Errorf("STOP: %q", got)
	}
	if code := p.ExitCode(t, 15*time.Second); code != 0 {
		t.Errorf("exit status %d after STOP\n%s", code, logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"Stopping","reason":"STOP command"`) {
		t.Errorf("JSON log lacks the stop:\n%s", logs.String())
	}
}

func TestBinaryVersionAndBadFlag(t *testing.T) {

	out, err := exec.Command(binary, "--version").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Errorf("--version: %q, %v", out, err)
	}
	err = exec.Command(binary, "--port", "nope").Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 {
		t.Errorf("a bad flag: %v, want exit status 2", err)
	}
}
