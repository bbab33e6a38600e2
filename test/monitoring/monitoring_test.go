package monitoring

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	// The operator's controller package, so that the operator's registry holds what cmd/manager's does.
	_ "github.com/sts-operator/sts-operator/internal/controller"
	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/stsproc"
	"github.com/sts-operator/sts-operator/internal/testutil"
	"github.com/sts-operator/sts-operator/internal/version"
)

const dir = "../../charts/sts-operator/monitoring"

// binary is the sts command, built once by TestMain: with the race detector under go test
// -race (make test), a data race in the server failing the test that ran it (stsproc).
var binary string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "sts-monitoring-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(tmp, "sts")
	if err := stsproc.Build("../../cmd/sts", binary); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// external are the metrics the dashboard and the alerts take from elsewhere than the table
// servers and the operator, with where they come from.
var external = map[string]string{
	"up":                                 "Prometheus, for every target",
	"ALERTS":                             "Prometheus, for its alerts",
	"kube_pod_status_ready":              "kube-state-metrics",
	"kube_pod_container_resource_limits": "kube-state-metrics",
}

// Every metric the dashboard and the alerts name exists: a table server exports it once it has
// served traffic (one journaled on the memory backend, one on Redis), or the operator's registry
// holds it, or it comes from Prometheus or kube-state-metrics (the custom-resource metrics of
// kube-state-metrics.yaml included).
func TestEveryMetricUsedIsExported(t *testing.T) {
	used := usedMetrics(t)
	exported := seriesNames(t, tableServers(t))
	ksm := kubeStateMetrics(t)
	registry := operatorRegistry()

	var sources = map[string]int{}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(used)) {
		switch {
		case exported[name]:
			sources["table server"]++
		case operatorHas(registry, name):
			sources["operator"]++
		case ksm[name]:
			sources["kube-state-metrics.yaml"]++
		case external[name] != "":
			sources[external[name]]++
		default:
			missing = append(missing, fmt.Sprintf("%s (in %s)", name, strings.Join(used[name], ", ")))
		}
	}
	if len(missing) > 0 {
		t.Errorf("no table server, operator or known source exports:\n  %s", strings.Join(missing, "\n  "))
	}
	t.Logf("%d metric names, by source: %v", len(used), sources)
	// The check would pass vacuously if the extraction found nothing.
	for _, name := range []string{"sts_list_lines", "sts_commands_total", "sts_journal_fsync_duration_seconds_bucket",
		"sts_backend_up", "controller_runtime_reconcile_errors_total", "sts_build_info"} {
		if used[name] == nil {
			t.Errorf("%s is not among the names found in the dashboard and the rules", name)
		}
	}
}

// usedMetrics returns the metric names of every query of the dashboard and every rule, each with
// where it is used.
func usedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	for _, q := range queries(t) {
		for _, name := range metricNames(q.expr) {
			if !slices.Contains(used[name], q.where) {
				used[name] = append(used[name], q.where)
			}
		}
	}
	return used
}

type query struct{ where, expr string }

// queries are the PromQL expressions of the rules and the dashboard (its panels' targets and its
// variables' label_values), Grafana's variables left in.
func queries(t *testing.T) []query {
	t.Helper()
	var qs []query
	for _, r := range loadRules(t).rules() {
		qs = append(qs, query{"rules.yaml " + r.Alert + r.Record, r.Expr})
	}
	d := loadDashboard(t)
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("dashboard %q %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Fatalf("dashboard variable %s: %q is not label_values(<selector>, <label>)", v.Name, v.Definition)
		}
		qs = append(qs, query{"dashboard variable " + v.Name, m[1]})
	}
	return qs
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// Metric names out of PromQL, without a parser: string literals, label matchers, ranges and
// grouping clauses are removed, then every identifier that is not a function, an aggregation or a
// keyword is a metric name.
var (
	grafanaVar = regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_:]*\}?`)
	stringLit  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	matchers   = regexp.MustCompile(`\{[^{}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\[\]]*\]`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	tokens     = regexp.MustCompile(`[0-9][0-9a-zA-Z_.]*|[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	keywords   = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
		"group_right": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"inf": true, "nan": true, "atan2": true, "start": true, "end": true}
)

func metricNames(expr string) []string {
	expr = grafanaVar.ReplaceAllString(expr, "x")
	expr = stringLit.ReplaceAllString(expr, `""`)
	expr = matchers.ReplaceAllString(expr, "{}")
	expr = ranges.ReplaceAllString(expr, "[]")
	expr = grouping.ReplaceAllString(expr, " ")
	var names []string
	for _, m := range tokens.FindAllStringSubmatch(expr, -1) {
		tok := m[0]
		if m[1] != "" || tok[0] >= '0' && tok[0] <= '9' || keywords[strings.ToLower(tok)] {
			continue // a call, a number or duration, a keyword
		}
		if !slices.Contains(names, tok) {
			names = append(names, tok)
		}
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`up{job="simpletableserver"} == 0`: {"up"},
		`max by (namespace, list) (sts_list_lines{list=~"$list"}) / on (namespace) -max by (namespace) (deriv(sts_list_lines[10m])) > 0`:                                                {"sts_list_lines"},
		`histogram_quantile(0.99, sum by (le) (rate(sts_journal_fsync_duration_seconds_bucket{x="a{b}"}[$__rate_interval]))) > 1e-1`:                                                    {"sts_journal_fsync_duration_seconds_bucket"},
		`(max by (namespace, pod) (kube_pod_status_ready{condition="true"}) == 0) * on (namespace, pod) group_left (simpletableserver) max by (namespace, pod, simpletableserver) (up)`: {"kube_pod_status_ready", "up"},
		`sum(rate(a_total[5m] offset 1h)) without (pod) / ignoring(x) b and c unless d or bool e`:                                                                                       {"a_total", "b", "c", "d", "e"},
		`label_replace(foo, "dst", "$1", "src", "(.*)")`:    {"foo"},
		`predict_linear(sts_list_lines[10m], 15 * 60) <= 0`: {"sts_list_lines"},
		`sum(x) by (a) + count_values("v", y)`:              {"x", "y"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
}

// seriesNames returns the names of the series of the servers' /metrics: a histogram's _bucket,
// _sum and _count.
func seriesNames(t *testing.T, servers map[string]*stsproc.Process) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for what, p := range servers {
		families := scrape(t, p.Base)
		for name, f := range families {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
			case dto.MetricType_SUMMARY:
				names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
			default:
				names[name] = true
			}
		}
		t.Logf("%s server: %d metric families", what, len(families))
	}
	return names
}

// tableServers starts two table servers, one journaled on the memory backend and one on Redis,
// and sends each the commands that make every series appear (READ, ADD, FIND, a KO, a lease
// given back, a connection to Redis counted).
func tableServers(t *testing.T) map[string]*stsproc.Process {
	t.Helper()
	redis := redistest.Start(t)
	servers := map[string][]string{
		"journaled": {"--state-dir", t.TempDir(), "--fsync-policy", "always"},
		"redis":     {"--redis-url", "redis://" + redis.Addr},
	}
	started := map[string]*stsproc.Process{}
	for what, args := range servers {
		port := stsproc.FreePort(t)
		p := stsproc.Start(t, binary, port, append([]string{"--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--dataset-dir", t.TempDir()}, args...)...)
		p.WaitReady(t)
		traffic(t, p.Base)
		if what == "redis" {
			reconnected(t, p.Base, redis)
		}
		started[what] = p
	}
	return started
}

// traffic sends a server what makes every table-server series appear.
func traffic(t *testing.T, base string) {
	t.Helper()
	call := func(cmd string, params url.Values, wantOK bool) http.Header {
		t.Helper()
		resp, err := http.Get(base + "/sts/" + cmd + "?" + params.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ok := resp.StatusCode == http.StatusOK && !strings.Contains(string(body), "KO"); ok != wantOK {
			t.Fatalf("%s %v: %d %q, want OK %v", cmd, params, resp.StatusCode, body, wantOK)
		}
		return resp.Header
	}
	list := url.Values{"FILENAME": {"users.csv"}}
	for _, line := range []string{"alice", "bob", "carol"} {
		call("ADD", url.Values{"FILENAME": {"users.csv"}, "LINE": {line}}, true)
	}
	call("READ", list, true)
	call("READ", url.Values{"FILENAME": {"users.csv"}, "KEEP": {"FALSE"}}, true)
	call("FIND", url.Values{"FILENAME": {"users.csv"}, "LINE": {"carol"}}, true)
	call("LENGTH", list, true)
	call("READ", url.Values{"FILENAME": {"missing.csv"}}, false) // a KO
	// A lease, given back: the list's lease series appear.
	h := call("READ", url.Values{"FILENAME": {"users.csv"}, "LEASE": {"30000"}}, true)
	lease := h.Get("X-STS-Lease")
	if lease == "" {
		t.Fatalf("a leased READ answered without X-STS-Lease: %v", h)
	}
	call("RELEASE", url.Values{"LEASE": {lease}}, true)
}

// reconnected makes the server at base open new connections to Redis, and returns its metrics
// once it has counted one: the connections opened at startup may all come before the server
// counts them (sts_backend_dials_total), so Redis drops its clients' connections.
func reconnected(t *testing.T, base string, redis *redistest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for drops := 0; ; drops++ {
		families := scrape(t, base)
		if families["sts_backend_dials_total"] != nil {
			t.Logf("redis server: a connection counted after %d drops", drops)
			return families
		}
		if time.Now().After(deadline) {
			t.Fatal("the server counted no connection to Redis in 10 seconds of dropped connections")
		}
		if _, err := redis.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
			t.Fatal(err)
		}
		if resp, err := http.Get(base + "/sts/LENGTH?FILENAME=users.csv"); err == nil {
			resp.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// operatorRegistry is the operator's registry as cmd/manager fills it: controller-runtime's
// metrics and sts_build_info.
func operatorRegistry() prometheus.Registerer {
	_ = ctrlmetrics.Registry.Register(version.Collector())
	return ctrlmetrics.Registry
}

// operatorHas says whether reg holds a metric family named name (a histogram's for a name ending
// in _bucket, _sum or _count). A registry does not list its collectors, and a vector without
// series gathers nothing; but it refuses a second, different collector of the same name.
func operatorHas(reg prometheus.Registerer, name string) bool {
	candidates := []string{name}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			candidates = append(candidates, base)
		}
	}
	for _, n := range candidates {
		probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: n, Help: "probe of " + n})
		if err := reg.Register(probe); err != nil {
			return true
		}
		reg.Unregister(probe)
	}
	return false
}

// kubeStateMetrics returns the metric names that kube-state-metrics.yaml makes kube-state-metrics
// export: kube_customresource_<name>.
func kubeStateMetrics(t *testing.T) map[string]bool {
	t.Helper()
	var cfg struct {
		Kind string `json:"kind"`
		Spec struct {
			Resources []struct {
				MetricNamePrefix *string `json:"metricNamePrefix"`
				Metrics          []struct {
					Name string `json:"name"`
				} `json:"metrics"`
			} `json:"resources"`
		} `json:"spec"`
	}
	readYAML(t, "kube-state-metrics.yaml", &cfg)
	if cfg.Kind != "CustomResourceStateMetrics" {
		t.Fatalf("kube-state-metrics.yaml: kind %q", cfg.Kind)
	}
	names := map[string]bool{}
	for _, r := range cfg.Spec.Resources {
		prefix := "kube_customresource"
		if r.MetricNamePrefix != nil {
			prefix = *r.MetricNamePrefix
		}
		for _, m := range r.Metrics {
			names[prefix+"_"+m.Name] = true
		}
	}
	return names
}

// rulesFile is a Prometheus rules file.
type rulesFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func (f rulesFile) rules() []rule {
	var rs []rule
	for _, g := range f.Groups {
		rs = append(rs, g.Rules...)
	}
	return rs
}

func loadRules(t *testing.T) rulesFile {
	t.Helper()
	var f rulesFile
	readYAML(t, "rules.yaml", &f)
	if len(f.rules()) == 0 {
		t.Fatal("rules.yaml holds no rules")
	}
	return f
}

// Every alert has a summary, a description and a severity, and rules.test.yaml has a case where
// it fires and one where it does not (promtool runs them: hack/rules-test.sh).
func TestEveryAlertIsTestedBothWays(t *testing.T) {
	var tests struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			Name  string `json:"name"`
			Cases []struct {
				Alert     string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	readYAML(t, "rules.test.yaml", &tests)
	if !slices.Equal(tests.RuleFiles, []string{"rules.yaml"}) {
		t.Errorf("rules.test.yaml tests %v, want [rules.yaml]", tests.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, c := range tc.Cases {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alert] = true
			} else {
				quiet[c.Alert] = true
			}
		}
	}
	for _, r := range loadRules(t).rules() {
		if r.Alert == "" {
			continue
		}
		if !fires[r.Alert] {
			t.Errorf("rules.test.yaml has no case where %s fires", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("rules.test.yaml has no case where %s does not fire", r.Alert)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s lacks a summary or a description", r.Alert)
		}
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s has severity %q, want warning or critical", r.Alert, s)
		}
	}
}

// dashboard is the part of Grafana's dashboard JSON the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource *datasource              `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		Expr       string      `json:"expr"`
		RefID      string      `json:"refId"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func (d dashboard) allPanels() []panel {
	var ps []panel
	for _, p := range d.Panels {
		ps = append(ps, p)
		ps = append(ps, p.Panels...)
	}
	return ps
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	return d
}

// The dashboard is Grafana JSON of schema 39: a Prometheus data source picked by the variable
// datasource, pickers for namespace, resource and list, panels on the 24-column grid with unique
// ids, and every table-server query following the namespace and resource pickers.
func TestDashboardIsGrafanaJSON(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion != 39 || d.UID == "" || d.Title == "" {
		t.Errorf("schemaVersion %d, uid %q, title %q: want 39 and a uid and a title", d.SchemaVersion, d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "datasource" && string(v.Query) != `"prometheus"` {
			t.Errorf("variable %s picks %s data sources, want prometheus", v.Name, v.Query)
		}
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			t.Errorf("variable %s does not query ${datasource}", v.Name)
		}
	}
	for name, typ := range map[string]string{"datasource": "datasource", "namespace": "query", "simpletableserver": "query", "list": "query"} {
		if vars[name] != typ {
			t.Errorf("no %s variable %s (have %v)", typ, name, vars)
		}
	}
	ids := map[int]string{}
	follows := regexp.MustCompile(`\b(sts_[a-z_]+)\{([^}]*)\}|\b(sts_[a-z_]+)\b`)
	for _, p := range d.allPanels() {
		if other, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d, taken by %q or zero", p.Title, p.ID, other)
		}
		ids[p.ID] = p.Title
		if g := p.GridPos; g.W < 1 || g.X < 0 || g.X+g.W > 24 || g.H < 1 {
			t.Errorf("panel %q: gridPos %+v off the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || len(p.Targets) == 0 || p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: want a title, targets and the data source ${datasource}", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q target %s: want an expr, a refId and the data source ${datasource}", p.Title, tg.RefID)
			}
			for _, m := range follows.FindAllStringSubmatch(tg.Expr, -1) {
				metric := m[1] + m[3]
				if metric == "sts_build_info" {
					continue // the operator's too: no resource
				}
				if !strings.Contains(m[2], `namespace=~"$namespace"`) || !strings.Contains(m[2], `simpletableserver=~"$simpletableserver"`) {
					t.Errorf("panel %q: %s does not follow the namespace and resource pickers", p.Title, metric)
				}
			}
		}
	}
}

// Every query of the dashboard parses as PromQL, Grafana's variables replaced as Grafana would:
// promtool checks them as recording rules.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := prometheusTool(t, "promtool")
	var rules []map[string]string
	for i, q := range queries(t) {
		if !strings.HasPrefix(q.where, "dashboard") {
			continue
		}
		expr := grafanaVariables("1m").Replace(q.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: an unknown Grafana variable in %s", q.where, q.expr)
		}
		rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:query_%d", i), "expr": expr})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s", len(rules), err, out)
	}
}

// prometheusTool returns the path of a program of Debian's prometheus package.
func prometheusTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("STS_SKIP_PROMTOOL") == "1" {
			testutil.Skip(t, "%s is not installed, and STS_SKIP_PROMTOOL=1 skips what needs it", name)
		}
		t.Fatal(name + " is not installed: apt-get install prometheus (or set STS_SKIP_PROMTOOL=1 to skip this test)")
	}
	return path
}

// grafanaVariables replaces the dashboard's variables as Grafana does with every namespace,
// resource, list and command picked, and rateInterval for $__rate_interval.
func grafanaVariables(rateInterval string) *strings.Replacer {
	return strings.NewReplacer("$__rate_interval", rateInterval, "$__interval", rateInterval, "$__range", "1h",
		"${datasource}", "x", "$namespace", ".*", "$simpletableserver", ".*", "$list", ".*", "$command", ".*")
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
