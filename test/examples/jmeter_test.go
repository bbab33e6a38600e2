//go:build examples

package examples

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sts-operator/sts-operator/internal/stsproc"
)

// jmeterPlan is the example plan, run unchanged.
const jmeterPlan = "../../examples/jmeter/sts-patterns.jmx"

// The plan with its defaults (5 users x 4 loops, 2 producers and 2 consumers of 10 orders, 3
// users x 6 leased vouchers of which every third fails its checkout), loading the lists itself
// with INITFILE as the examples' README says for a local server.
func TestExamplePlan(t *testing.T) {
	srv := serveExampleData(t)
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
	requireLeasedVouchers(t, srv, samples, 18, 6)
	// READ FIRST KEEP=TRUE moves the line to the end: 20 reads of 20 logins rotate the list back
	// to the file's order, whatever the threads' interleaving.
	if got, want := srv.Export(t, "logins.csv"), fileLines(t, "logins.csv"); !slices.Equal(got, want) {
		t.Errorf("logins.csv after 20 KEEP=TRUE reads:\n%q\nwant the file's order\n%q", got, want)
	}
	// The coupons handed out are the file's first 20, each once (used-coupons is UNIQUE).
	if got, want := sorted(srv.Export(t, "used-coupons")), sorted(fileLines(t, "coupons.csv")[:20]); !slices.Equal(got, want) {
		t.Errorf("coupons handed out:\n%q\nwant\n%q", got, want)
	}
	if got := srv.Export(t, "orders-done"); len(got) != 20 || len(sorted(got)) != len(slices.Compact(sorted(got))) {
		t.Errorf("orders done: %q, want 20 distinct orders", got)
	}
}

// A plugin user's jmeter.properties starts the server (port, dataset directory, the files to
// load at startup) and more users than coupons run the plan: the coupons run out, each handed
// out once, and the plan's "No more line" path passes. The leased vouchers run with other knobs:
// 4 users x 6, every second checkout failing.
func TestExamplePlanWithThePluginsProperties(t *testing.T) {
	port := stsproc.FreePort(t)
	props := filepath.Join(t.TempDir(), "jmeter.properties")
	content := fmt.Sprintf("# the plugin's keys, as in JMeter's bin/jmeter.properties\n"+
		"jmeterPlugin.sts.port=%d\njmeterPlugin.sts.datasetDirectory=%s\n"+
		"jmeterPlugin.sts.initFileAtStartup=logins.csv,coupons.csv,vouchers.csv\njmeterPlugin.sts.addTimestamp=true\n", port, copyData(t))
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startSTS(t, port, "--bind", "127.0.0.1", "--properties", props)
	samples := runPlan(t, srv, map[string]string{"sts.users": "15", "sts.lease.users": "4", "sts.lease.failEvery": "2"})

	requireAllPassed(t, samples)
	requireCounts(t, samples, map[string]int{
		"READ logins.csv FIRST KEEP=TRUE":       60,
		"READ coupons.csv FIRST KEEP=FALSE":     60,
		"ADD the coupon to used-coupons (POST)": coupons, // the other 10 reads answered No more line
	})
	requireLengths(t, srv, map[string]int{"logins.csv": logins, "coupons.csv": 0, "used-coupons": coupons})
	if got, want := sorted(srv.Export(t, "used-coupons")), sorted(fileLines(t, "coupons.csv")); !slices.Equal(got, want) {
		t.Errorf("coupons handed out:\n%q\nwant every coupon once\n%q", got, want)
	}
	requireLeasedVouchers(t, srv, samples, 24, 12)
}

// requireLeasedVouchers checks the run of the thread group "4. Leased vouchers": reads leased
// reads, each with a lease whose checkout either went through (recorded in used-vouchers, then
// ACK) or failed (RELEASE); released vouchers came back to vouchers.csv and were read again.
// Every voucher ends up used once or back in its list, none still leased.
func requireLeasedVouchers(t *testing.T, srv *server, samples []sample, reads, released int) {
	t.Helper()
	acked := reads - released
	requireCounts(t, samples, map[string]int{
		"READ vouchers.csv LEASE":                 reads,
		"ADD the voucher to used-vouchers (POST)": acked,
		"ACK the lease":                           acked,
		"RELEASE the lease":                       released,
	})
	requireLengths(t, srv, map[string]int{"vouchers.csv": vouchers - acked, "used-vouchers": acked})
	requireAccountedFor(t, srv, "vouchers.csv", "used-vouchers")
	requireLeases(t, srv, "vouchers.csv", released, 0)
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
	args := []string{"-n", "-t", jmeterPlan, "-l", results, "-j", filepath.Join(dir, "jmeter.log"),
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
	if _, err := os.Stat(results); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "jmeter.log"))
		t.Fatalf("jmeter wrote no results (%v):\n%s\n%s", err, out.String(), log)
	}
	var samples []sample
	for _, r := range readCSV(t, results, "label", "responseCode", "success", "failureMessage") {
		samples = append(samples, sample{label: r["label"], code: r["responseCode"], failure: r["failureMessage"], success: r["success"] == "true"})
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
