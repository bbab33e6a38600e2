// Command sts is the table server: a drop-in replacement for the JMeter "HTTP Simple Table
// Server". It listens on --bind:--port, restores its lists from --state-dir if it has one, loads
// the startup lists, and serves until SIGTERM, SIGINT or /sts/STOP, then stops gracefully: it
// fails its readiness check, refuses new commands, finishes the ones in flight, writes the
// journal out and exits. It never reads standard input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/journal"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	s, err := resolveSettings(args, lookupEnv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sts:", err)
		return 2
	}
	if s.version {
		fmt.Fprintln(stdout, version.Version)
		return 0
	}
	log := newLogger(s.logFormat, stderr)
	if limit, set := memoryLimit(s.server.Limits.MaxTotalBytes, lookupEnv); set {
		debug.SetMemoryLimit(limit)
		log.Info("Go memory limit set from --max-total-bytes", "bytes", limit)
	}
	if err := serve(s, log); err != nil {
		log.Error("Table server failed", "error", err)
		return 1
	}
	return 0
}

// memoryBase is what a table server holds beyond the lists: the runtime, connections, the web
// page, the REQUEST_ID bindings (16 MiB at most).
const memoryBase = 64 << 20

// memoryLimit is the Go runtime's soft memory limit for a budget of maxTotalBytes: twice the
// budget (the heap the garbage collector lets grow over what is live) and memoryBase, so that the
// collector works harder before the process passes what docs/security.md promises. GOMEMLIMIT,
// when set, is the user's.
func memoryLimit(maxTotalBytes int64, lookupEnv func(string) (string, bool)) (int64, bool) {
	if _, user := lookupEnv("GOMEMLIMIT"); user || maxTotalBytes <= 0 {
		return 0, false
	}
	return 2*maxTotalBytes + memoryBase, true
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// serve runs the server until a signal, STOP or a failure, then shuts it down gracefully. The
// listener comes up first, so that /healthz answers while the state directory is awaited and
// restored; /readyz and the commands wait for that and the startup loading.
func serve(s *settings, log *slog.Logger) error {
	removed, err := datafile.RemoveSaveLeftovers(s.server.DatasetDir)
	for _, name := range removed {
		log.Info("Removed the temporary file of an interrupted SAVE", "file", name)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("Could not remove the temporary files of interrupted SAVEs", "error", err)
	}
	st, mem, err := openStore(s, log)
	if err != nil {
		return err
	}
	defer st.Close()
	s.server.WaitForStartup = s.state.dir != ""
	s.server.Durability = durability(s)
	srv, err := sts.NewServer(s.server, st, log)
	if err != nil {
		return err
	}
	if observed, ok := st.(*redisstore.Store); ok {
		observed.Observe(srv.Metrics().ObserveBackend, srv.Metrics().CountBackendDial)
	}
	addr := net.JoinHostPort(s.bind, strconv.Itoa(s.server.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := srv.HTTPServer(addr)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("Listening", "address", ln.Addr().String(), "version", version.Version, "datasetDir", s.server.DatasetDir, "stateDir", s.state.dir, "backend", backendName(s))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type startup struct {
		j   *journal.Journal
		err error
	}
	started := make(chan startup, 1)
	go func() {
		j, err := start(ctx, s, srv, st, mem, log)
		started <- startup{j, err}
	}()
	if s.authTokenFile != "" {
		go watchAuthToken(ctx, s.authTokenFile, s.server.AuthToken, srv, log)
	}

	var (
		j       *journal.Journal
		failed  <-chan struct{} // the journal's failure
		failure error
		pending = true // startup has not reported yet
	)
	for stopping := false; !stopping; {
		select {
		case sig := <-signals:
			log.Info("Stopping", "signal", sig.String())
			stopping = true
		case <-srv.StopRequested():
			log.Info("Stopping", "reason", "STOP command")
			stopping = true
		case err := <-served:
			failure, stopping = err, true
		case st := <-started:
			pending = false
			if st.err != nil {
				failure, stopping = st.err, true
			} else if j = st.j; j != nil {
				failed = j.Failed()
			}
		case <-failed:
			log.Error("Stopping", "reason", "the journal failed")
			failure, stopping = errors.New("the journal failed; restart to restore the state from disk"), true
		}
	}
	cancel() // ends a wait for the state directory
	if pending {
		if st := <-started; st.err == nil {
			j = st.j
		}
	}
	srv.Drain()
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), s.shutdownTimeout)
	defer cancelShutdown()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		_ = hs.Close()
		failure = errors.Join(failure, fmt.Errorf("shutting down: %w", err))
	}
	if j != nil {
		if err := j.Close(); err != nil {
			failure = errors.Join(failure, fmt.Errorf("closing the journal: %w", err))
		}
	}
	if failure != nil && !errors.Is(failure, http.ErrServerClosed) {
		return failure
	}
	log.Info("Stopped")
	return nil
}

// openStore opens the backend the settings choose: Redis with --redis-url, else a memory store
// (which it also returns, for the journal).
func openStore(s *settings, log *slog.Logger) (store.Store, *memory.Memory, error) {
	if s.redis.url == "" {
		mem := memory.New(memory.WithLimits(s.server.Limits))
		return mem, mem, nil
	}
	conn := redisstore.Connection{URL: s.redis.url, CAFile: s.redis.caFile, SentinelMaster: s.redis.sentinelMaster, Cluster: s.redis.cluster}
	if s.redis.minReplicas > 0 {
		conn.WaitTimeout = s.redis.replicaTimeout
	}
	if s.redis.sentinelAddrs != "" {
		conn.SentinelAddrs = strings.Split(s.redis.sentinelAddrs, ",")
	}
	for _, f := range []struct {
		flag, path string
		value      *string
	}{{"redis-username-file", s.redis.usernameFile, &conn.Username}, {"redis-password-file", s.redis.passwordFile, &conn.Password}} {
		if f.path == "" {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return nil, nil, fmt.Errorf("--%s: %w", f.flag, err)
		}
		*f.value = strings.TrimSpace(string(b))
	}
	client, err := conn.Client()
	if err != nil {
		return nil, nil, err
	}
	st, err := redisstore.New(redisstore.Options{
		Client: client, KeyPrefix: s.redis.keyPrefix, MinReplicas: s.redis.minReplicas, ReplicaTimeout: s.redis.replicaTimeout,
		Limits: s.server.Limits, Log: log,
	})
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return st, nil, nil
}

func backendName(s *settings) string {
	if s.redis.url != "" {
		return "redis"
	}
	return "memory"
}

// backendPoll is how often startup looks whether a shared backend answers yet (the store's own
// health check pings it).
const backendPoll = 100 * time.Millisecond

// start restores the state, if there is a state directory, or waits for a shared backend to
// answer, then loads the startup lists; the server is then ready. The journal it returns
// records every later change.
func start(ctx context.Context, s *settings, srv *sts.Server, st store.Store, mem *memory.Memory, log *slog.Logger) (*journal.Journal, error) {
	if h, shared := st.(store.Health); shared {
		// A Redis still starting is waited for, not a crash: the loads need it.
		for logged := false; !h.Up(); logged = true {
			if !logged {
				log.Info("Waiting for the backend to answer before loading the startup lists", "backend", h.Name())
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(backendPoll):
			}
		}
	}
	var j *journal.Journal
	if s.state.dir != "" {
		began := time.Now()
		var err error
		j, err = journal.Open(ctx, s.state.dir, mem, journal.Options{
			Policy:        fsyncPolicies[s.state.policy],
			Interval:      s.state.interval,
			SnapshotBytes: s.state.snapshotBytes,
			WaitForLock:   s.state.wait,
			ObserveSync:   srv.Metrics().ObserveFsync,
			Log:           log,
		})
		var locked *journal.LockedError
		if errors.As(err, &locked) {
			return nil, fmt.Errorf("%w; stop it first, or start with --state-dir-wait to wait for it", err)
		}
		if err != nil {
			return nil, fmt.Errorf("restoring the state: %w", err)
		}
		srv.Metrics().WatchJournal(j.Size)
		lines := 0
		lists, _ := mem.Lists(ctx)
		for _, l := range lists {
			lines += l.Length
		}
		log.Info("Restored state", "dir", s.state.dir, "lists", len(lists), "lines", lines, "fsyncPolicy", s.state.policy,
			"duration", time.Since(began).Round(time.Millisecond))
	}
	srv.LoadAtStartup(ctx)
	return j, nil
}

// authTokenPoll is how often --auth-token-file is read again. A Secret mounted in a pod is
// replaced in place when it changes, and a rotated token must not need a restart, which would
// cost a server without durability its lists.
const authTokenPoll = time.Second

// watchAuthToken gives srv the token in path whenever the file's content changes, until ctx
// ends. A file that cannot be read or is empty leaves the current token, and is logged once.
func watchAuthToken(ctx context.Context, path, current string, srv *sts.Server, log *slog.Logger) {
	tick := time.NewTicker(authTokenPoll)
	defer tick.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		token, err := readAuthToken(path)
		if err == nil && token != current {
			err = srv.SetAuthToken(token)
		}
		if err != nil {
			if err.Error() != lastErr {
				log.Error("Keeping the current auth token", "file", path, "error", err)
			}
			lastErr = err.Error()
			continue
		}
		lastErr = ""
		if token != current {
			current = token
			log.Info("Replaced the auth token", "file", path)
		}
	}
}

// durability says what a change survives, as the web page shows it.
func durability(s *settings) string {
	switch {
	case s.redis.url != "":
		return "Redis's own (its persistence and replicas)"
	case s.state.dir == "":
		return ""
	case s.state.policy == "interval":
		return "journal, fsync every " + s.state.interval.String()
	}
	return "journal, fsync before each answer"
}
