package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/journal"
)

// settings is what the sts command runs with.
type settings struct {
	bind            string
	server          sts.Config
	state           stateSettings
	redis           redisSettings
	properties      string // the properties file, if any
	authTokenFile   string
	logFormat       string
	shutdownTimeout time.Duration
	version         bool
}

// stateSettings are the durability flags; with an empty dir nothing is kept on disk.
type stateSettings struct {
	dir           string
	policy        string // always or interval
	interval      time.Duration
	wait          bool
	snapshotBytes int64
}

// redisSettings are the flags of the Redis backend; with an empty url the lists live in this
// process (the memory backend).
type redisSettings struct {
	url            string
	usernameFile   string
	passwordFile   string
	caFile         string
	sentinelMaster string
	sentinelAddrs  string // comma-separated host:port
	cluster        bool
	keyPrefix      string
	minReplicas    int
	replicaTimeout time.Duration
}

// memoryOnlyFlags apply to the memory backend only; redisFlags need --redis-url.
var (
	memoryOnlyFlags = []string{"state-dir", "fsync-policy", "fsync-interval", "state-dir-wait", "snapshot-bytes", "max-total-bytes"}
	redisFlags      = []string{"redis-username-file", "redis-password-file", "redis-ca-file", "redis-sentinel-master", "redis-sentinel-addrs", "redis-cluster", "redis-key-prefix", "redis-min-replicas", "redis-min-replicas-timeout"}
)

// fsyncPolicies are the values of --fsync-policy.
var fsyncPolicies = map[string]journal.Policy{"always": journal.Always, "interval": journal.Interval}

// envPrefix starts the environment variable of each flag: --dataset-dir is STS_DATASET_DIR.
const envPrefix = "STS_"

// listSeparator separates the entries of a repeatable flag given in the environment:
// STS_LOAD="users=/data/users.csv;emails=/data/emails.csv".
const listSeparator = ";"

// propertyFlags maps the original's jmeter.properties keys to our flags.
var propertyFlags = map[string]string{
	"jmeterPlugin.sts.port":                        "port",
	"jmeterPlugin.sts.datasetDirectory":            "dataset-dir",
	"jmeterPlugin.sts.addTimestamp":                "add-timestamp",
	"jmeterPlugin.sts.charsetEncodingReadFile":     "charset-read",
	"jmeterPlugin.sts.charsetEncodingWriteFile":    "charset-write",
	"jmeterPlugin.sts.charsetEncodingHttpResponse": "charset-response",
	"jmeterPlugin.sts.initFileAtStartup":           "init-files",
	"jmeterPlugin.sts.initFileAtStartupRegex":      "init-files-regex",
}

// propertyFallbacks are the keys read when a key of propertyFlags is absent, as the original
// does: the response charset defaults to JMeter's own sampleresult.default.encoding.
var propertyFallbacks = map[string]string{
	"jmeterPlugin.sts.charsetEncodingHttpResponse": "sampleresult.default.encoding",
}

// booleanProperties are read with jmeterBoolean, as the original reads them.
var booleanProperties = map[string]bool{"add-timestamp": true, "init-files-regex": true}

// jmeterBoolean reads a boolean property as the plugin does, through JMeter's
// JMeterUtils.getPropDefault: trimmed, "true" or "t" in any case is true, "false" or "f" false,
// otherwise an integer, true when it is 1; anything else (absent included) is the default.
func jmeterBoolean(value string, def bool) bool {
	v := strings.TrimSpace(value)
	switch {
	case strings.EqualFold(v, "true"), strings.EqualFold(v, "t"):
		return true
	case strings.EqualFold(v, "false"), strings.EqualFold(v, "f"):
		return false
	}
	n, err := strconv.ParseInt(v, 10, 32) // Integer.parseInt
	if err != nil {
		return def
	}
	return n == 1
}

// resolveSettings resolves the settings from, in order of precedence, the command-line flags,
// the environment (STS_<FLAG_NAME>), the properties file and the defaults. usage receives the
// flags' help text.
func resolveSettings(args []string, lookupEnv func(string) (string, bool), usage io.Writer) (*settings, error) {
	s := &settings{bind: "0.0.0.0", server: sts.DefaultConfig(), logFormat: "text", shutdownTimeout: 10 * time.Second,
		state: stateSettings{policy: "always", interval: journal.DefaultInterval, snapshotBytes: journal.DefaultSnapshotBytes},
		redis: redisSettings{keyPrefix: "sts:", replicaTimeout: 2 * time.Second}}
	fs := flag.NewFlagSet("sts", flag.ContinueOnError)
	fs.SetOutput(usage)
	c := &s.server
	fs.StringVar(&s.bind, "bind", s.bind, "address to listen on")
	fs.IntVar(&c.Port, "port", c.Port, "port to listen on")
	fs.StringVar(&c.DatasetDir, "dataset-dir", c.DatasetDir, "directory of the files INITFILE reads and SAVE writes")
	fs.BoolVar(&c.AddTimestamp, "add-timestamp", c.AddTimestamp, "SAVE's default for ADD_TIMESTAMP")
	fs.StringVar(&c.InitFiles, "init-files", c.InitFiles, "files of the dataset directory to load at startup: a comma list, or a regular expression with --init-files-regex")
	fs.BoolVar(&c.InitFilesRegex, "init-files-regex", c.InitFilesRegex, "--init-files is a regular expression over the dataset directory's file names")
	fs.StringVar(&c.CharsetRead, "charset-read", c.CharsetRead, "charset of the files read (INITFILE, LOAD)")
	fs.StringVar(&c.CharsetWrite, "charset-write", c.CharsetWrite, "charset of the files written (SAVE, EXPORT)")
	fs.StringVar(&c.CharsetResponse, "charset-response", c.CharsetResponse, "charset of the answers")
	fs.StringVar(&s.properties, "properties", "", "a jmeter.properties file whose jmeterPlugin.sts.* keys are read")
	fs.BoolVar(&c.AllowStop, "allow-stop", c.AllowStop, "let /sts/STOP stop the server")
	fs.StringVar(&s.authTokenFile, "auth-token-file", "", "file holding the bearer token every /sts request must carry")
	fs.Var(byteSizeFlag{&c.MaxBodyBytes}, "max-body-bytes", "largest request body accepted, in bytes (512Ki, 16Mi, ... accepted)")
	fs.Var(byteSizeFlag{&c.MinFreeBytes}, "min-free-bytes", "free space SAVE must leave in the dataset directory's file system, so that the journal on the same volume can still write (0: no check)")
	fs.Int64Var(&c.Limits.MaxLinesPerList, "max-lines-per-list", 0, "most lines a list may hold (0: no limit)")
	fs.Var(byteSizeFlag{&c.Limits.MaxTotalBytes}, "max-total-bytes", "the memory budget of the lists: their lines, leases, REQUEST_ID outcomes and UNIQUE indexes with their bookkeeping, e.g. 512Mi (0: no limit)")
	fs.Var(byteSizeFlag{&c.Limits.MaxLineBytes}, "max-line-bytes", "longest line accepted, in bytes (0: no limit)")
	fs.Int64Var(&c.Limits.MaxLists, "max-lists", c.Limits.MaxLists, "most lists the server may hold; a command that would create one more is refused (0: no limit)")
	fs.Var(byteSizeFlag{&c.MaxNameBytes}, "max-name-bytes", "longest list name (FILENAME) accepted, in bytes (0: no limit)")
	fs.DurationVar(&c.MaxWait, "max-wait", c.MaxWait, "longest WAIT of a blocking read; a longer WAIT is shortened to it (0: reads never wait)")
	fs.DurationVar(&c.MaxLease, "max-lease", c.MaxLease, "longest LEASE a read may take and LEASE_MS an EXTEND may give; a longer one is refused")
	fs.IntVar(&c.MaxDeliveries, "max-deliveries", c.MaxDeliveries, "send a leased line to the list <list>.dead instead of back to its list once it has come back this many times (0: never); a read's MAX_DELIVERIES overrides it")
	fs.Var(maxDeliveriesFlag{&c.MaxDeliveriesByList}, "max-deliveries-list", "LIST=N: --max-deliveries for the list LIST (repeatable; "+listSeparator+"-separated in the environment)")
	fs.DurationVar(&c.RequestIDWindow, "request-id-window", c.RequestIDWindow, "how long the outcome of a change sent with a REQUEST_ID is kept for its retries")
	fs.StringVar(&s.state.dir, "state-dir", "", "directory of the journal and snapshots that make the lists survive a restart (empty: lists live in memory only)")
	fs.StringVar(&s.state.policy, "fsync-policy", s.state.policy, "with --state-dir, when a change is acknowledged: always (after its fsync) or interval (after its write; fsync every --fsync-interval)")
	fs.DurationVar(&s.state.interval, "fsync-interval", s.state.interval, "fsync period of --fsync-policy interval")
	fs.BoolVar(&s.state.wait, "state-dir-wait", false, "wait while another server holds --state-dir, instead of exiting")
	fs.Var(byteSizeFlag{&s.state.snapshotBytes}, "snapshot-bytes", "bytes of journal after which a snapshot is written and the journal restarted")
	fs.StringVar(&s.redis.url, "redis-url", "", "keep the lists in Redis or Valkey, shared by every sts using it: redis://[user:password@]host:port/db, or rediss:// for TLS (empty: in this process)")
	fs.StringVar(&s.redis.usernameFile, "redis-username-file", "", "file holding the Redis ACL username, which replaces the URL's user")
	fs.StringVar(&s.redis.passwordFile, "redis-password-file", "", "file holding the Redis password, which replaces the URL's")
	fs.StringVar(&s.redis.caFile, "redis-ca-file", "", "PEM file of the certificate authorities a rediss:// server is checked against")
	fs.StringVar(&s.redis.sentinelMaster, "redis-sentinel-master", "", "find the Redis master through Sentinel under this name (with --redis-sentinel-addrs)")
	fs.StringVar(&s.redis.sentinelAddrs, "redis-sentinel-addrs", "", "the sentinels, host:port,host:port,...")
	fs.BoolVar(&s.redis.cluster, "redis-cluster", false, "--redis-url names a node of a Redis Cluster")
	fs.StringVar(&s.redis.keyPrefix, "redis-key-prefix", s.redis.keyPrefix, "start of every Redis key: the list NAME is the key <prefix>{NAME}")
	fs.IntVar(&s.redis.minReplicas, "redis-min-replicas", 0, "acknowledge a change only once this many Redis replicas hold it (Redis WAIT; not with --redis-cluster)")
	fs.DurationVar(&s.redis.replicaTimeout, "redis-min-replicas-timeout", s.redis.replicaTimeout, "how long a change waits for --redis-min-replicas before it is answered as not recorded")
	fs.BoolVar(&c.NoWebUI, "no-web-ui", false, "turn the web page at /ui/ off")
	fs.IntVar(&c.PageMaxStreams, "ui-max-streams", c.PageMaxStreams, "most live streams of the web page at once; one more is refused (0: no limit)")
	fs.IntVar(&c.PageMaxStreamsPerSession, "ui-max-streams-per-session", c.PageMaxStreamsPerSession, "most live streams of the web page one browser session may hold (0: no limit)")
	fs.DurationVar(&c.PageStreamWriteTimeout, "ui-stream-write-timeout", c.PageStreamWriteTimeout, "drop a live stream of the web page whose browser has not read for this long")
	fs.BoolVar(&c.MetricsAuth, "metrics-auth", false, "/metrics asks for the token of --auth-token-file too")
	fs.IntVar(&c.MetricsMaxLists, "metrics-max-lists", c.MetricsMaxLists, "most lists with a sts_list_lines series of their own; the others are summed in sts_other_lists_lines")
	fs.DurationVar(&c.RegexTimeout, "regex-timeout", c.RegexTimeout, "time limit of all the regular-expression matches of one FIND together")
	fs.Var(loadsFlag(&c.Loads), "load", "LIST=PATH: load the file at PATH into the list LIST at startup (repeatable; "+listSeparator+"-separated in the environment)")
	fs.Var(loadDirsFlag(&c.LoadDirs), "load-dir", "DIR=REGEX: load every file of DIR whose name fully matches REGEX under its name at startup (repeatable; "+listSeparator+"-separated in the environment)")
	fs.StringVar(&s.logFormat, "log-format", s.logFormat, "log format: text or json")
	fs.DurationVar(&s.shutdownTimeout, "shutdown-timeout", s.shutdownTimeout, "how long a stop waits for requests in flight")
	fs.BoolVar(&s.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := applyEnvironment(fs, set, lookupEnv); err != nil {
		return nil, err
	}
	if s.properties != "" {
		props, err := readProperties(s.properties)
		if err != nil {
			return nil, fmt.Errorf("--properties: %w", err)
		}
		if err := applyProperties(fs, set, s.properties, props); err != nil {
			return nil, err
		}
		c.LoadAndRunOnStartup = jmeterBoolean(props["jmeterPlugin.sts.loadAndRunOnStartup"], false)
	}
	if s.logFormat != "text" && s.logFormat != "json" {
		return nil, fmt.Errorf("--log-format %q: want text or json", s.logFormat)
	}
	if err := s.check(set); err != nil {
		return nil, err
	}
	if s.authTokenFile != "" {
		token, err := readAuthToken(s.authTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--auth-token-file: %w", err)
		}
		c.AuthToken = token
	}
	return s, nil
}

// readAuthToken reads the token file: its content without surrounding white space, which must
// not be empty.
func readAuthToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("%s: the file is empty", path)
	}
	return token, nil
}

// check refuses values that parse but make no sense, and flags of the backend not chosen; set
// holds the flags given (on the command line, in the environment or in the properties).
func (s *settings) check(set map[string]bool) error {
	if err := s.checkBackend(set); err != nil {
		return err
	}
	c := &s.server
	for _, v := range []struct {
		flag  string
		value int64
	}{
		{"max-lines-per-list", c.Limits.MaxLinesPerList},
		{"max-total-bytes", c.Limits.MaxTotalBytes},
		{"max-line-bytes", c.Limits.MaxLineBytes},
		{"max-lists", c.Limits.MaxLists},
		{"max-name-bytes", c.MaxNameBytes},
		{"max-wait", int64(c.MaxWait)},
		{"max-deliveries", int64(c.MaxDeliveries)},
		{"min-free-bytes", c.MinFreeBytes},
		{"metrics-max-lists", int64(c.MetricsMaxLists)},
		{"ui-max-streams", int64(c.PageMaxStreams)},
		{"ui-max-streams-per-session", int64(c.PageMaxStreamsPerSession)},
	} {
		if v.value < 0 {
			return fmt.Errorf("--%s must not be negative", v.flag)
		}
	}
	if c.MaxBodyBytes <= 0 {
		return errors.New("--max-body-bytes must be positive")
	}
	if c.MaxLease < time.Millisecond {
		return errors.New("--max-lease must be at least 1ms: LEASE counts milliseconds")
	}
	if c.RequestIDWindow <= 0 {
		return errors.New("--request-id-window must be positive")
	}
	if c.PageStreamWriteTimeout <= 0 {
		return errors.New("--ui-stream-write-timeout must be positive")
	}
	if _, known := fsyncPolicies[s.state.policy]; !known {
		return fmt.Errorf("--fsync-policy %q: want always or interval", s.state.policy)
	}
	if s.state.interval <= 0 {
		return errors.New("--fsync-interval must be positive")
	}
	if s.state.snapshotBytes <= 0 {
		return errors.New("--snapshot-bytes must be positive")
	}
	return s.checkStateDir()
}

// checkStateDir refuses a state directory that SAVE could write into (the dataset directory
// itself) and a dataset directory inside the state directory, the real paths compared. A state
// directory inside the dataset directory (the operator's layout on a claim: <claim>/state) is
// out of the protocol's reach, since file names hold no '/': its top-level name there becomes
// the server's ReservedName, which INITFILE and SAVE refuse.
func (s *settings) checkStateDir() error {
	if s.state.dir == "" {
		return nil
	}
	state, dataset := realPath(s.state.dir), realPath(s.server.DatasetDir)
	switch {
	case state == dataset:
		return fmt.Errorf("--state-dir %q is the --dataset-dir: SAVE could write over the journal; give the state a directory of its own", s.state.dir)
	case within(dataset, state):
		return fmt.Errorf("--dataset-dir %q is inside --state-dir %q: give each a directory of its own", s.server.DatasetDir, s.state.dir)
	case within(state, dataset):
		rel, _ := filepath.Rel(dataset, state)
		s.server.ReservedName = strings.Split(rel, string(filepath.Separator))[0]
	}
	return nil
}

// realPath is path absolute with its symbolic links resolved, as far as it exists.
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	var rest []string
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if dir == filepath.Dir(dir) {
			return abs
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// within reports whether path is inside dir (not dir itself).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// checkBackend refuses the flags that do not apply to the backend chosen, so that a user who
// expects a journal on Redis, or Sentinel without Redis, learns it at startup.
func (s *settings) checkBackend(set map[string]bool) error {
	if s.redis.url == "" {
		for _, f := range redisFlags {
			if set[f] {
				return fmt.Errorf("--%s needs --redis-url", f)
			}
		}
		return nil
	}
	for _, f := range memoryOnlyFlags {
		if set[f] {
			return fmt.Errorf("--%s applies to the memory backend only: with --redis-url, durability and memory are the Redis server's (replicas, AOF, maxmemory, --redis-min-replicas)", f)
		}
	}
	switch {
	case s.redis.minReplicas < 0:
		return errors.New("--redis-min-replicas must not be negative")
	case s.redis.minReplicas > 0 && s.redis.cluster:
		return errors.New("--redis-min-replicas is not supported with --redis-cluster")
	case s.redis.replicaTimeout <= 0:
		return errors.New("--redis-min-replicas-timeout must be positive")
	case strings.ContainsAny(s.redis.keyPrefix, "{}"):
		return errors.New("--redis-key-prefix must not hold { or }: each list's keys take their Cluster hash tag from {NAME}")
	case (s.redis.sentinelMaster == "") != (s.redis.sentinelAddrs == ""):
		return errors.New("--redis-sentinel-master and --redis-sentinel-addrs go together")
	case s.redis.sentinelMaster != "" && s.redis.cluster:
		return errors.New("--redis-sentinel-master and --redis-cluster exclude each other")
	}
	return nil
}

// applyEnvironment sets every flag not given on the command line from its environment variable.
func applyEnvironment(fs *flag.FlagSet, set map[string]bool, lookupEnv func(string) (string, bool)) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		value, found := lookupEnv(name)
		if set[f.Name] || f.Name == "version" || !found {
			return
		}
		values := []string{value}
		if _, repeatable := f.Value.(listFlag); repeatable {
			values = strings.FieldsFunc(value, func(r rune) bool { return strings.ContainsRune(listSeparator, r) })
		}
		for _, v := range values {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, value, err))
			}
		}
		set[f.Name] = true
	})
	return errors.Join(errs...)
}

// applyProperties sets every flag still unset from the properties of the file at path. Values
// are trimmed, as JMeter does.
func applyProperties(fs *flag.FlagSet, set map[string]bool, path string, props map[string]string) error {
	var errs []error
	for key, name := range propertyFlags {
		value, found := props[key]
		if fallback, ok := propertyFallbacks[key]; ok && !found {
			value, found = props[fallback]
		}
		if set[name] || !found {
			continue
		}
		value = strings.TrimSpace(value)
		if booleanProperties[name] {
			value = fmt.Sprint(jmeterBoolean(value, fs.Lookup(name).DefValue == "true"))
		}
		if err := fs.Set(name, value); err != nil {
			errs = append(errs, fmt.Errorf("%s %s=%q: %w", path, key, value, err))
		}
	}
	return errors.Join(errs...)
}

// listFlag marks the repeatable flags, whose environment variable holds several entries.
type listFlag interface{ repeatable() }

// pairsFlag is a repeatable flag of KEY=VALUE entries, each kept as a T; the first '=' splits, so
// a value may hold more (a --load-dir regex, say).
type pairsFlag[T any] struct {
	entries *[]T
	form    string // how an entry is written, for errors: "LIST=PATH"
	pair    func(T) (key, value string)
	entry   func(key, value string) T
}

func (f pairsFlag[T]) repeatable() {}

func (f pairsFlag[T]) String() string {
	if f.entries == nil {
		return ""
	}
	var parts []string
	for _, e := range *f.entries {
		key, value := f.pair(e)
		parts = append(parts, key+"="+value)
	}
	return strings.Join(parts, listSeparator)
}

func (f pairsFlag[T]) Set(v string) error {
	key, value, err := cutPair(v, f.form)
	if err != nil {
		return err
	}
	*f.entries = append(*f.entries, f.entry(key, value))
	return nil
}

// cutPair splits an entry KEY=VALUE of a repeatable flag at its first '='; both must be there.
func cutPair(v, form string) (key, value string, err error) {
	key, value, found := strings.Cut(v, "=")
	if !found || key == "" || value == "" {
		return "", "", fmt.Errorf("want %s, got %q", form, v)
	}
	return key, value, nil
}

// maxDeliveriesFlag is --max-deliveries-list LIST=N, into a map made on its first entry.
type maxDeliveriesFlag struct{ byList *map[string]int }

func (f maxDeliveriesFlag) repeatable() {}

func (f maxDeliveriesFlag) String() string {
	if f.byList == nil {
		return ""
	}
	var parts []string
	for list, n := range *f.byList {
		parts = append(parts, list+"="+strconv.Itoa(n))
	}
	slices.Sort(parts)
	return strings.Join(parts, listSeparator)
}

func (f maxDeliveriesFlag) Set(v string) error {
	list, value, err := cutPair(v, "LIST=N")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return fmt.Errorf("%s: N must be a number of deliveries, 0 or more", v)
	}
	if *f.byList == nil {
		*f.byList = map[string]int{}
	}
	(*f.byList)[list] = n
	return nil
}

// loadsFlag is --load LIST=PATH.
func loadsFlag(loads *[]sts.Load) pairsFlag[sts.Load] {
	return pairsFlag[sts.Load]{entries: loads, form: "LIST=PATH",
		pair:  func(l sts.Load) (string, string) { return l.List, l.Path },
		entry: func(list, path string) sts.Load { return sts.Load{List: list, Path: path} }}
}

// loadDirsFlag is --load-dir DIR=REGEX.
func loadDirsFlag(dirs *[]sts.LoadDir) pairsFlag[sts.LoadDir] {
	return pairsFlag[sts.LoadDir]{entries: dirs, form: "DIR=REGEX",
		pair:  func(d sts.LoadDir) (string, string) { return d.Dir, d.Match },
		entry: func(dir, match string) sts.LoadDir { return sts.LoadDir{Dir: dir, Match: match} }}
}
