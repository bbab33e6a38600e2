//go:build jmeter

// Package jmeter runs the example plan examples/jmeter/sts-patterns.jmx with a real JMeter
// against the sts binary, as a user moving from the JMeter plugin would: the plan is not
// changed, and its own assertions (answers, regular expressions on the HTML bodies, UNIQUE adds
// that fail on a line handed out twice) must all pass. `make jmeter-test` prepares JMeter
// (hack/jmeter.sh) and the binary, then runs it.
package jmeter

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The binaries under test, which `make jmeter-test` builds.
var (
	stsBinary    = absolute("../../bin/sts")
	jmeterBinary = absolute("../../bin/jmeter/jmeter")
)

const (
	plan     = "../../examples/jmeter/sts-patterns.jmx"
	dataDir  = "../../examples/data"
	logins   = 20 // lines of examples/data/logins.csv
	coupons  = 50 // lines of examples/data/coupons.csv
	pollWait = 10 * time.Second
)

func absolute(path string) string {
	p, err := filepath.Abs(path)
	if err != nil {
		panic(err)
	}
	return p
}

// The plan with its defaults (5 users x 4 loops, 2 producers and 2 consumers of 10 orders),
// loading the lists itself with INITFILE as the examples' README says for a local server.
func TestExamplePlan(t *testing.T) {
	port := freePort(t)
	srv := startSTS(t, port, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dataset-dir", copyData(t))
	samples := runPlan(t, srv, map[string]string{"sts.init": "true"})

	requireAllPassed(t, samples)
	requireCounts(t, samples, map[string]int{
		"INITFILE logins.csv":                   1,
		"INITFILE coupons.csv":                  1,
		"READ logins.csv FIRST KEEP=TRUE":       20,
		"READ coupons.csv FIRST KEEP=FALSE":     20,
		"ADD the coupon to used-coupons (POST)": 20,
		"ADD order to orders-queue (POST)":      20,
		"ADD the order to orders-done (POST)":   20,
		"STATUS":                                1,
	})
	requireLengths(t, srv, map[string]int{
		"logins.csv": logins, "coupons.csv": coupons - 20, "used-coupons": 20, "orders-queue": 0, "orders-done": 20,
	})
	// READ FIRST KEEP=TRUE moves the line to the end: 20 reads of 20 logins rotate the list back
	// to the file's order, whatever the threads' interleaving.
	if got, want := srv.export(t, "logins.csv"), fileLines(t, "logins.csv"); !slices.Equal(got, want) {
		t.Errorf("logins.csv after 20 KEEP=TRUE reads:\n%q\nwant the file's order\n%q", got, want)
	}
	// The coupons handed out are the file's first 20, each once (used-coupons is UNIQUE).
	if got, want := sorted(srv.export(t, "used-coupons")), sorted(fileLines(t, "coupons.csv")[:20]); !slices.Equal(got, want) {
		t.Errorf("coupons handed out:\n%q\nwant\n%q", got, want)
	}
	if got := srv.export(t, "orders-done"); len(got) != 20 || len(sorted(got)) != len(slices.Compact(sorted(got))) {
		t.Errorf("orders done: %q, want 20 distinct orders", got)
	}
}

// A plugin user's jmeter.properties starts the server (port, dataset directory, the files to
// load at startup) and more users than coupons run the plan: the coupons run out, each handed
// out once, and the plan's "No more line" path passes.
func TestExamplePlanWithThePluginsProperties(t *testing.T) {
	port := freePort(t)
	props := filepath.Join(t.TempDir(), "jmeter.properties")
	content := fmt.Sprintf("# the plugin's keys, as in JMeter's bin/jmeter.properties\n"+
		"jmeterPlugin.sts.port=%d\njmeterPlugin.sts.datasetDirectory=%s\n"+
		"jmeterPlugin.sts.initFileAtStartup=logins.csv,coupons.csv\njmeterPlugin.sts.addTimestamp=true\n", port, copyData(t))
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startSTS(t, port, "--bind", "127.0.0.1", "--properties", props)
	samples := runPlan(t, srv, map[string]string{"sts.users": "15"})

	requireAllPassed(t, samples)
	requireCounts(t, samples, map[string]int{
		"READ logins.csv FIRST KEEP=TRUE":       60,
		"READ coupons.csv FIRST KEEP=FALSE":     60,
		"ADD the coupon to used-coupons (POST)": coupons, // the other 10 reads answered No more line
	})
	requireLengths(t, srv, map[string]int{"logins.csv": logins, "coupons.csv": 0, "used-coupons": coupons})
	if got, want := sorted(srv.export(t, "used-coupons")), sorted(fileLines(t, "coupons.csv")); !slices.Equal(got, want) {
		t.Errorf("coupons handed out:\n%q\nwant every coupon once\n%q", got, want)
	}
}

// sample is one row of JMeter's CSV results.
type sample struct {
	label, code, failure string
	success              bool
}

// runPlan runs the example plan against srv with extra JMeter properties and returns its samples.
func runPlan(t *testing.T, srv *server, props map[string]string) []sample {
	t.Helper()
	dir := t.TempDir()
	results := filepath.Join(dir, "results.csv")
	args := []string{"-n", "-t", plan, "-l", results, "-j", filepath.Join(dir, "jmeter.log"),
		"-Jsts.host=127.0.0.1", "-Jsts.port=" + srv.port,
		"-Jjmeter.save.saveservice.output_format=csv",
		"-Jjmeter.save.saveservice.print_field_names=true",
		"-Jjmeter.save.saveservice.assertion_results_failure_message=true",
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		args = append(args, "-J"+k+"="+props[k])
	}
	cmd := exec.Command(jmeterBinary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("jmeter: %v\n%s", err, out.String())
	}
	// JMeter can fail to load a plan and still exit 0: only a results file says it ran.
	f, err := os.Open(results)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "jmeter.log"))
		t.Fatalf("jmeter wrote no results (%v):\n%s\n%s", err, out.String(), log)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("results: %d rows, %v", len(rows), err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"label", "responseCode", "success", "failureMessage"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("results have no %s column: %q", name, rows[0])
		}
	}
	var samples []sample
	for _, r := range rows[1:] {
		samples = append(samples, sample{label: r[col["label"]], code: r[col["responseCode"]],
			failure: r[col["failureMessage"]], success: r[col["success"]] == "true"})
	}
	t.Logf("jmeter ran %d samples", len(samples))
	return samples
}

func requireAllPassed(t *testing.T, samples []sample) {
	t.Helper()
	for _, s := range samples {
		if !s.success || s.code != "200" {
			t.Errorf("sample %q failed: HTTP %s, %s", s.label, s.code, s.failure)
		}
	}
}

func requireCounts(t *testing.T, samples []sample, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for _, s := range samples {
		got[s.label]++
	}
	for label, n := range want {
		if got[label] != n {
			t.Errorf("%d samples %q, want %d (all: %v)", got[label], label, n, got)
		}
	}
}

// server is a running sts binary.
type server struct{ base, port string }

// startSTS runs the sts binary with args, which make it listen on 127.0.0.1:port, waits until
// it is ready and stops it when the test ends.
func startSTS(t *testing.T, port int, args ...string) *server {
	t.Helper()
	cmd := exec.Command(stsBinary, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", stsBinary, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("sts log:\n%s", log.String())
		}
	})
	srv := &server{base: "http://127.0.0.1:" + strconv.Itoa(port), port: strconv.Itoa(port)}
	deadline := time.Now().Add(pollWait)
	for {
		resp, err := http.Get(srv.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return srv
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sts not ready after %v: %v\n%s", pollWait, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// requireLengths checks list lengths in the JSON form of STATUS.
func requireLengths(t *testing.T, srv *server, want map[string]int) {
	t.Helper()
	var status struct {
		Lists []struct {
			Name   string `json:"name"`
			Length int    `json:"length"`
		} `json:"lists"`
	}
	if err := json.Unmarshal([]byte(srv.get(t, "/sts/STATUS?FORMAT=JSON")), &status); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range status.Lists {
		got[l.Name] = l.Length
	}
	for name, n := range want {
		if length, ok := got[name]; !ok || length != n {
			t.Errorf("list %s: length %d (present %v), want %d", name, length, ok, n)
		}
	}
}

// export returns a list's lines.
func (s *server) export(t *testing.T, list string) []string {
	t.Helper()
	return strings.Split(strings.TrimSuffix(s.get(t, "/sts/EXPORT?FILENAME="+list), "\n"), "\n")
}

func (s *server) get(t *testing.T, target string) string {
	t.Helper()
	resp, err := http.Get(s.base + target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d, %v: %s", target, resp.StatusCode, err, b)
	}
	return string(b)
}

// copyData copies examples/data into a fresh dataset directory.
func copyData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"logins.csv", "coupons.csv"} {
		b, err := os.ReadFile(filepath.Join(dataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fileLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func sorted(lines []string) []string { return slices.Sorted(slices.Values(lines)) }
