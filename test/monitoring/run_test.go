package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The dashboard shows a run: a real Prometheus (Debian's) scrapes the two table servers of
// tableServers, labelled as the chart's PodMonitor labels them, while a list drains on one of
// them; then every dashboard query that reads table servers, Grafana's variables replaced,
// answers at least one series. A panel whose query parses but finds nothing would be blank in
// Grafana: a renamed label, a matcher no series has, a division that never has a divisor. The
// queries of the operator's metrics, kube-state-metrics' and Prometheus' alerts only parse
// (TestDashboardQueriesParse): neither an operator nor kube-state-metrics runs here.
func TestDashboardQueriesShowARun(t *testing.T) {
	prometheus := prometheusTool(t, "prometheus")
	servers := tableServers(t)
	tableServerSeries := seriesNames(t, servers)
	ctx, stop := context.WithCancel(context.Background())
	drained := make(chan struct{})
	go drain(ctx, t, servers["journaled"].Base, drained)
	t.Cleanup(func() { stop(); <-drained })

	prom := startPrometheus(t, prometheus, servers)
	// Enough scrapes of both servers for the rates and derivatives over 10 s.
	testutil.Until(t, time.Minute, 500*time.Millisecond, "ten scrapes of each table server", func() bool {
		res, err := prom.query(`min(count_over_time(up{job="simpletableserver"}[1m])) >= 10 and count(up{job="simpletableserver"}) == 2`)
		return err == nil && len(res) == 1
	})

	checked, skipped := 0, 0
	for _, q := range queries(t) {
		if !strings.HasPrefix(q.where, "dashboard") {
			continue
		}
		if !readsTableServers(q.expr, tableServerSeries) {
			skipped++
			continue
		}
		expr := grafanaVariables("10s").Replace(q.expr)
		res, err := prom.query(expr)
		switch {
		case err != nil:
			t.Errorf("%s: %v\n  %s", q.where, err, expr)
		case len(res) == 0:
			t.Errorf("%s: no series during a run\n  %s", q.where, expr)
		}
		checked++
	}
	// The check would pass vacuously if no query were taken for the table servers'.
	if checked < 25 {
		t.Errorf("only %d of the dashboard's queries were run against the table servers", checked)
	}
	t.Logf("%d dashboard queries run against the table servers, %d of others left", checked, skipped)
}

// readsTableServers says whether every metric expr names is a table server's (or up).
func readsTableServers(expr string, series map[string]bool) bool {
	for _, name := range metricNames(expr) {
		if name != "up" && !series[name] {
			return false
		}
	}
	return true
}

// drain loads a list on the server at base and consumes it, a line every 50 ms, until ctx ends:
// the time to empty and the lines consumed a second have a value.
func drain(ctx context.Context, t *testing.T, base string, done chan<- struct{}) {
	defer close(done)
	get := func(target string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+target, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	for i := range 2000 {
		get("/sts/ADD?FILENAME=coupons.csv&LINE=" + url.QueryEscape(fmt.Sprintf("coupon-%04d", i)))
	}
	for ctx.Err() == nil {
		get("/sts/READ?FILENAME=coupons.csv&KEEP=FALSE")
		time.Sleep(50 * time.Millisecond)
	}
}

// prometheusServer is a Prometheus of the test's own.
type prometheusServer struct{ base string }

// startPrometheus runs prometheus scraping the servers every second, each target labelled as
// the chart's PodMonitor labels a table-server pod (job, namespace, simpletableserver, pod).
func startPrometheus(t *testing.T, prometheus string, servers map[string]*stsproc.Process) prometheusServer {
	t.Helper()
	dir := t.TempDir()
	var targets []any
	for what, p := range servers {
		targets = append(targets, map[string]any{
			"targets": []string{strings.TrimPrefix(p.Base, "http://")},
			"labels":  map[string]string{"namespace": "load", "simpletableserver": what, "pod": what + "-0"},
		})
	}
	config, err := yaml.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"scrape_configs": []any{map[string]any{"job_name": "simpletableserver", "static_configs": targets}},
	})
	if err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, config, 0o644); err != nil {
		t.Fatal(err)
	}
	port := stsproc.FreePort(t)
	cmd := exec.Command(prometheus, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	var log testutil.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus' log:\n%s", log.String())
		}
	})
	p := prometheusServer{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	testutil.Until(t, 30*time.Second, 100*time.Millisecond, "prometheus ready", func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// query evaluates expr now and returns its series.
func (p prometheusServer) query(expr string) ([]json.RawMessage, error) {
	resp, err := http.Get(p.base + "/api/v1/query?" + url.Values{"query": {expr}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return nil, fmt.Errorf("prometheus answered %s: %w", resp.Status, err)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", answer.Error)
	}
	return answer.Data.Result, nil
}
