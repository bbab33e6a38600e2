package main

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaults(t *testing.T) {
	s, err := resolveSettings(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := sts.DefaultConfig()
	if s.bind != "0.0.0.0" || !reflect.DeepEqual(s.server, want) || s.logFormat != "text" {
		t.Errorf("defaults: bind %q, %+v", s.bind, s.server)
	}
	if s.server.Port != 9191 || s.server.DatasetDir != "." || !s.server.AddTimestamp || s.server.CharsetResponse != "UTF-8" || !s.server.AllowStop {
		t.Errorf("the original's defaults are not kept: %+v", s.server)
	}
}

// TestPrecedence checks flags > environment > properties file > defaults, setting by setting.
func TestPrecedence(t *testing.T) {
	props := writeTemp(t, "jmeter.properties", strings.Join([]string{
		"jmeterPlugin.sts.port=1111",
		"jmeterPlugin.sts.datasetDirectory=/from/properties",
		"jmeterPlugin.sts.addTimestamp=FALSE",
		"jmeterPlugin.sts.charsetEncodingReadFile=ISO-8859-1",
		"jmeterPlugin.sts.charsetEncodingWriteFile=ISO-8859-15",
		"jmeterPlugin.sts.charsetEncodingHttpResponse=windows-1252",
		"jmeterPlugin.sts.initFileAtStartup= a.csv,b.csv ",
		"jmeterPlugin.sts.initFileAtStartupRegex=True",
		"jmeterPlugin.sts.daemon=false",
		"jmeterPlugin.sts.loadAndRunOnStartup= TRUE",
	}, "\n"))
	token := writeTemp(t, "token", " s3cret\n")
	environment := map[string]string{
		"STS_PROPERTIES":      props,
		"STS_PORT":            "2222",
		"STS_DATASET_DIR":     "/from/env",
		"STS_CHARSET_READ":    "UTF-16",
		"STS_LOAD":            "users=/a/users.csv;emails=/b/emails.csv",
		"STS_LOAD_DIR":        "/d=.*\\.csv",
		"STS_AUTH_TOKEN_FILE": token,
		"STS_REGEX_TIMEOUT":   "250ms",
		"STS_ALLOW_STOP":      "false",
	}
	args := []string{"--port", "3333", "--load", "only=/c/only.csv", "--max-body-bytes", "1024"}
	s, err := resolveSettings(args, env(environment), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := sts.DefaultConfig()
	want.Port = 3333                                             // flag over env and properties
	want.DatasetDir = "/from/env"                                // env over properties
	want.CharsetRead = "UTF-16"                                  // env over properties
	want.AddTimestamp = false                                    // properties over default
	want.CharsetWrite = "ISO-8859-15"                            // properties
	want.CharsetResponse = "windows-1252"                        // properties
	want.InitFiles = "a.csv,b.csv"                               // properties, trimmed
	want.InitFilesRegex = true                                   // Boolean.parseBoolean("True")
	want.LoadAndRunOnStartup = true                              // only shown by CONFIG
	want.Loads = []sts.Load{{List: "only", Path: "/c/only.csv"}} // flag replaces the env list
	want.LoadDirs = []sts.LoadDir{{Dir: "/d", Match: `.*\.csv`}}
	want.AuthToken = "s3cret"
	want.RegexTimeout = 250 * time.Millisecond
	want.AllowStop = false
	want.MaxBodyBytes = 1024
	if !reflect.DeepEqual(s.server, want) {
		t.Errorf("resolved\n %+v\nwant\n %+v", s.server, want)
	}
	s, err = resolveSettings(nil, env(map[string]string{"STS_LOAD": "users=/a/users.csv;emails=/b/x=y.csv"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if wantLoads := []sts.Load{{List: "users", Path: "/a/users.csv"}, {List: "emails", Path: "/b/x=y.csv"}}; !reflect.DeepEqual(s.server.Loads, wantLoads) {
		t.Errorf("STS_LOAD: %+v", s.server.Loads)
	}
}

// The response charset falls back to JMeter's sampleresult.default.encoding, as the original's.
func TestResponseCharsetFallsBackToJMetersEncoding(t *testing.T) {
	for content, want := range map[string]string{
		"sampleresult.default.encoding=ISO-8859-1\n":                                                      "ISO-8859-1",
		"sampleresult.default.encoding=ISO-8859-1\njmeterPlugin.sts.charsetEncodingHttpResponse=UTF-16\n": "UTF-16",
		"# nothing\n": "UTF-8",
	} {
		props := writeTemp(t, "jmeter.properties", content)
		s, err := resolveSettings([]string{"--properties", props}, env(nil), io.Discard)
		if err != nil || s.server.CharsetResponse != want {
			t.Errorf("%q: response charset %q, %v; want %s", content, s.server.CharsetResponse, err, want)
		}
	}
}

func TestBadSettings(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"bad port flag":       {args: []string{"--port", "x"}},
		"bad port env":        {env: map[string]string{"STS_PORT": "nine"}},
		"bad bool env":        {env: map[string]string{"STS_ADD_TIMESTAMP": "maybe"}},
		"bad load":            {args: []string{"--load", "nopath"}},
		"bad load-dir env":    {env: map[string]string{"STS_LOAD_DIR": "/d"}},
		"missing properties":  {args: []string{"--properties", "/nonexistent/jmeter.properties"}},
		"missing token file":  {args: []string{"--auth-token-file", "/nonexistent/token"}},
		"extra argument":      {args: []string{"extra"}},
		"bad log format":      {args: []string{"--log-format", "xml"}},
		"bad properties port": {args: []string{"--properties", writeTemp(t, "p", "jmeterPlugin.sts.port=abc")}},
		"empty token file":    {args: []string{"--auth-token-file", writeTemp(t, "t", " \n")}},
		"bad duration":        {args: []string{"--regex-timeout", "soon"}},
		"bad fsync policy":    {args: []string{"--fsync-policy", "sometimes"}},
		"zero fsync interval": {args: []string{"--fsync-interval", "0s"}},
		"negative max wait":   {args: []string{"--max-wait", "-1s"}},
		"negative lines":      {args: []string{"--max-lines-per-list", "-5"}},
		"bad total bytes":     {env: map[string]string{"STS_MAX_TOTAL_BYTES": "lots"}},
		"zero body bytes":     {args: []string{"--max-body-bytes", "0"}},
		"zero snapshot bytes": {args: []string{"--snapshot-bytes", "0"}},
		"negative max lists":  {args: []string{"--metrics-max-lists", "-1"}},
		"zero max lease":      {args: []string{"--max-lease", "0s"}},
		"sub-ms max lease":    {args: []string{"--max-lease", "500us"}},
		"negative deliveries": {args: []string{"--max-deliveries", "-1"}},
		"bad deliveries list": {args: []string{"--max-deliveries-list", "q=-1"}},
		"deliveries no list":  {env: map[string]string{"STS_MAX_DELIVERIES_LIST": "=3"}},
		"zero id window":      {args: []string{"--request-id-window", "0s"}},
	} {
		if _, err := resolveSettings(tc.args, env(tc.env), io.Discard); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestProductionFlags checks the flags the operator passes, from the command line and from the
// environment, and the sizes they accept.
func TestProductionFlags(t *testing.T) {
	args := []string{"--state-dir=/state", "--state-dir-wait", "--fsync-policy=interval", "--fsync-interval=250ms",
		"--max-lines-per-list=1000", "--max-total-bytes=536870912", "--max-line-bytes=4Ki", "--max-wait=30s", "--metrics-auth"}
	s, err := resolveSettings(args, env(map[string]string{"STS_METRICS_MAX_LISTS": "7", "STS_SNAPSHOT_BYTES": "1Mi", "STS_MAX_BODY_BYTES": "2Mi"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	wantState := stateSettings{dir: "/state", policy: "interval", interval: 250 * time.Millisecond, wait: true, snapshotBytes: 1 << 20}
	if s.state != wantState {
		t.Errorf("state settings %+v, want %+v", s.state, wantState)
	}
	c := s.server
	if c.Limits.MaxLinesPerList != 1000 || c.Limits.MaxTotalBytes != 512<<20 || c.Limits.MaxLineBytes != 4096 ||
		c.MaxWait != 30*time.Second || !c.MetricsAuth || c.MetricsMaxLists != 7 || c.MaxBodyBytes != 2<<20 {
		t.Errorf("server settings %+v", c)
	}
	s, err = resolveSettings(nil, env(map[string]string{"STS_STATE_DIR": "/s", "STS_MAX_TOTAL_BYTES": "512Mi"}), io.Discard)
	if err != nil || s.state.dir != "/s" || s.state.policy != "always" || s.server.Limits.MaxTotalBytes != 512<<20 {
		t.Errorf("from the environment: %+v, %v", s, err)
	}
}

func TestByteSizes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "512Mi": 512 << 20, "1Gi": 1 << 30, "1.5Ki": 1536, "100M": 100e6, "2k": 2000,
		"0.5": 1, "1E": 1e18, "7Ei": 7 << 60, " 3Ki ": 3072,
	} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "Mi", "-1", "+5", "1e3", "1/2", "abc", "5 Mi", "1.2.3", "8Ei", "99999999999999999999", "1KB", "."} {
		if got, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", in, got)
		}
	}
}

// Boolean properties are read as JMeter reads them for the plugin: true/t, false/f in any case,
// else an integer (1 is true), else the default.
func TestBooleanPropertiesReadLikeJMeter(t *testing.T) {
	for value, want := range map[string][3]bool{ // addTimestamp (default true), initFileAtStartupRegex, loadAndRunOnStartup (default false)
		"TRUE":  {true, true, true},
		" t ":   {true, true, true},
		"1":     {true, true, true},
		"+1":    {true, true, true},
		"False": {false, false, false},
		"f":     {false, false, false},
		"0":     {false, false, false},
		"2":     {false, false, false},
		"yes":   {true, false, false},
		"":      {true, false, false},
	} {
		props := writeTemp(t, "jmeter.properties", strings.Join([]string{
			"jmeterPlugin.sts.addTimestamp=" + value,
			"jmeterPlugin.sts.initFileAtStartupRegex=" + value,
			"jmeterPlugin.sts.loadAndRunOnStartup=" + value,
		}, "\n"))
		s, err := resolveSettings([]string{"--properties", props}, env(nil), io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		if got := [3]bool{s.server.AddTimestamp, s.server.InitFilesRegex, s.server.LoadAndRunOnStartup}; got != want {
			t.Errorf("%q: addTimestamp, initFileAtStartupRegex, loadAndRunOnStartup = %v, want %v", value, got, want)
		}
	}
}

// TestLeaseFlags checks the lease and REQUEST_ID settings, from the command line and from the
// environment, where the per-list dead-letter thresholds are ;-separated.
func TestLeaseFlags(t *testing.T) {
	args := []string{"--max-lease=10m", "--max-deliveries=5", "--max-deliveries-list=poison=1", "--request-id-window=30s"}
	s, err := resolveSettings(args, env(map[string]string{"STS_MAX_DELIVERIES_LIST": "ignored=9"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := s.server
	if c.MaxLease != 10*time.Minute || c.MaxDeliveries != 5 || !reflect.DeepEqual(c.MaxDeliveriesByList, map[string]int{"poison": 1}) || c.RequestIDWindow != 30*time.Second {
		t.Errorf("from the flags: %+v", c)
	}
	s, err = resolveSettings(nil, env(map[string]string{"STS_MAX_DELIVERIES_LIST": "a=1;b=0", "STS_REQUEST_ID_WINDOW": "1m"}), io.Discard)
	if err != nil || !reflect.DeepEqual(s.server.MaxDeliveriesByList, map[string]int{"a": 1, "b": 0}) || s.server.RequestIDWindow != time.Minute {
		t.Errorf("from the environment: %+v, %v", s.server, err)
	}
}
