// Package redistest starts real Redis servers for tests: a standalone server, a master and its
// replica watched by three sentinels, or a cluster, each process on a free loopback port with its
// own temporary directory, and stopped when the test ends. Real servers rather than a fake,
// because what a Redis backend must get right (persistence, replication, failover, cluster
// redirections) is what a fake gets wrong.
//
// It needs Debian's redis-server, redis-sentinel and redis-tools (redis-cli). Where they are
// missing a test that starts a server fails, so that a machine without Redis cannot pass by not
// running the tests; STS_SKIP_REDIS=1 skips those tests instead.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// Server is one redis-server (or redis-sentinel) process started for a test. Its methods are
// for the test's goroutine.
type Server struct {
	Addr     string // 127.0.0.1:port
	Dir      string // a t.TempDir: redis.log, and what the server persists (RDB, AOF, nodes.conf)
	Password string // what the server requires (WithPassword), or ""

	binary  string   // redis-server or redis-sentinel
	conf    string   // a configuration file, the first argument (sentinels), or ""
	extra   []string // arguments after the defaults (options)
	busPort bool     // port+10000 must be free too: a cluster node's bus
	// prioritized runs the server in a scheduling group of its own ahead of the machine's other
	// processes (WithPriority); PriorityErr says why it could not.
	prioritized bool
	PriorityErr error

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has ended
}

// Option changes how Start runs a server.
type Option func(*Server)

// WithPassword makes the server require pw (requirepass) and give it to its master (masterauth).
func WithPassword(pw string) Option {
	return func(s *Server) {
		s.Password = pw
		s.extra = append(s.extra, "--requirepass", pw, "--masterauth", pw)
	}
}

// WithUser adds the ACL user name, with password pw and every right (keys, channels, commands),
// beside the default user.
func WithUser(name, pw string) Option {
	return WithArgs("--user", name, "on", ">"+pw, "~*", "&*", "+@all")
}

// WithArgs adds redis-server arguments after the defaults, which they override: for example
// "--appendonly", "yes" or "--maxmemory", "1mb".
func WithArgs(args ...string) Option {
	return func(s *Server) { s.extra = append(s.extra, args...) }
}

// WithPriority runs the server ahead of the machine's other processes, where the test has the
// privilege to (Linux, root): in a session of its own, whose scheduling group gets the highest
// weight (autogroup nice -20), all of the server's threads alike. The time SLOWLOG gives a
// command is then the command's own, not the time the server waited for a processor that other
// work of a busy machine held. Server.PriorityErr says why it could not. Not real-time
// scheduling, which made the main thread wait on a lock held by the server's own background
// thread, itself waiting for a processor.
func WithPriority() Option {
	return func(s *Server) { s.prioritized = true }
}

// WithReplicaOf makes the server a replica of the server at addr (host:port).
func WithReplicaOf(addr string) Option {
	host, port, _ := net.SplitHostPort(addr) // a malformed addr leaves them empty: redis refuses to start and logs why
	return WithArgs("--replicaof", host, port)
}

// Start runs a redis-server on a free port of 127.0.0.1 and returns once it answers PING. By
// default it persists nothing (no RDB, no AOF). When the test ends the server is stopped, and the
// end of its log is logged if the test failed.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t, "redis-server")
	for _, opt := range opts {
		opt(s)
	}
	s.start(t)
	return s
}

// newServer prepares a server of the named program, with its directory and its cleanup.
func newServer(t testing.TB, program string) *Server {
	t.Helper()
	s := &Server{binary: requireBinary(t, program), Dir: t.TempDir()}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("%s %s, the end of its log:\n%s", program, s.Addr, s.logTail(30))
		}
	})
	return s
}

// requireBinary returns the path of a Redis program. When it is not installed the test fails,
// or is skipped if STS_SKIP_REDIS=1 asks for that: it never passes without having run.
func requireBinary(t testing.TB, program string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	if os.Getenv("STS_SKIP_REDIS") == "1" {
		testutil.Skip(t, "%s is not installed, and STS_SKIP_REDIS=1 skips the tests that need Redis", program)
	}
	t.Fatalf("%s is not installed: apt-get install redis-server redis-sentinel redis-tools (or set STS_SKIP_REDIS=1 to skip the tests that need Redis)", program)
	return ""
}

// errAddrInUse is a server's failure to listen on the port it was given.
var errAddrInUse = errors.New("address already in use")

// start runs the server on a free port. A port is only known to be free until it is closed, so
// it tries another one when the server finds it taken.
func (s *Server) start(t testing.TB) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t, s.busPort)))
		err := s.run()
		if err == nil {
			return
		}
		if !errors.Is(err, errAddrInUse) || attempt == 3 {
			t.Fatalf("%s %s: %v", filepath.Base(s.binary), s.Addr, err)
		}
	}
}

// freePort returns a loopback port that was free a moment ago. With bus, port+10000 (where a
// cluster node talks to the others) was free too. Ports are drawn at random below Linux's
// ephemeral range (32768 and up), which the kernel hands to any process's listener or outgoing
// connection: a killed master's freed port taken there by another package's Redis made its
// replica resynchronise from that empty stranger, emptying the Sentinel failover tests.
func freePort(t testing.TB, bus bool) int {
	t.Helper()
	for range 100 {
		port := 10000 + rand.IntN(22000) // 10000-31999; a bus at +10000 stays below 42000
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken
		}
		free := !bus
		if bus && port+10000 <= 65535 {
			if b, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000))); err == nil {
				b.Close()
				free = true
			}
		}
		l.Close()
		if free {
			return port
		}
	}
	t.Fatal("no free port for a cluster node and its bus (port+10000)")
	return 0
}

// run starts the process on s.Addr and waits until it answers PING.
func (s *Server) run() error {
	logPath := filepath.Join(s.Dir, "redis.log")
	// The process writes what it prints before its log is open (a configuration error) to the
	// same file, which it appends to as well.
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	info, err := log.Stat()
	if err != nil {
		return err
	}
	offset := info.Size()

	_, port, _ := net.SplitHostPort(s.Addr)
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(args, "--port", port, "--bind", "127.0.0.1", "--protected-mode", "no",
		"--daemonize", "no", "--dir", s.Dir, "--logfile", logPath, "--save", "", "--appendonly", "no")
	if filepath.Base(s.binary) == "redis-server" {
		// Every test's Redis records what would make a shared Redis stall its other clients: a
		// command of more than SlowCommand, and latency events beyond it (SlowLog, Latency).
		ms := strconv.FormatInt(SlowCommand.Milliseconds(), 10)
		args = append(args, "--slowlog-log-slower-than", strconv.FormatInt(SlowCommand.Microseconds(), 10),
			"--slowlog-max-len", "1024", "--latency-monitor-threshold", ms)
	}
	args = append(args, s.extra...)
	cmd := exec.Command(s.binary, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr(s.prioritized)
	if err := cmd.Start(); err != nil {
		return err
	}
	if s.prioritized {
		s.PriorityErr = prioritize(cmd.Process.Pid)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // how it ended is in its log
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	deadline := time.Now().Add(10 * time.Second)
	for {
		if s.answers(cmd.Process.Pid) {
			return nil
		}
		select {
		case <-exited:
			if b, _ := os.ReadFile(logPath); int64(len(b)) > offset && strings.Contains(string(b[offset:]), "Address already in use") {
				return errAddrInUse
			}
			return fmt.Errorf("exited (%v) before answering PING", cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return errors.New("did not answer PING within 10s")
		}
	}
}

// answers tells whether the server at s.Addr answers PING and is process pid, not another
// process that has the port.
func (s *Server) answers(pid int) bool {
	if _, err := s.Do("PING"); err != nil {
		return false
	}
	return infoHas(s, "server", "process_id:"+strconv.Itoa(pid)) == nil
}

// running tells whether the process is started and has not ended.
func (s *Server) running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Kill ends the server abruptly (SIGKILL to its process group, with any background save), as a
// crash or a lost machine would, and waits until it has ended.
func (s *Server) Kill() {
	if !s.running() {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // -pid: its group (sysProcAttr)
	<-s.exited
}

// Freeze stops the server's process without ending it (SIGSTOP), until Thaw: it accepts
// connections and answers nothing, as a Redis behind a firewall that drops packets does.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGCONT) })
}

// Thaw lets a frozen server run again (SIGCONT).
func (s *Server) Thaw(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Stop ends the server gracefully (SIGTERM: it saves if configured to), or with Kill if it has
// not ended within 5 seconds.
func (s *Server) Stop() {
	if !s.running() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.Kill()
	}
}

// Restart starts the server again, stopped first if it is running, on the same port with the
// same directory and arguments: the server comes back where clients knew it.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.run(); err != nil {
		t.Fatalf("restarting %s %s: %v", filepath.Base(s.binary), s.Addr, err)
	}
}

// URL is the server's address as a client takes it, database 0, with its password if it has one.
func (s *Server) URL() string {
	u := url.URL{Scheme: "redis", Host: s.Addr, Path: "/0"}
	if s.Password != "" {
		u.User = url.UserPassword("", s.Password)
	}
	return u.String()
}

// logTail returns the last n lines of the server's log.
func (s *Server) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Sentinel is a master, its replica and three sentinels monitoring them, all local processes.
type Sentinel struct {
	MasterName string
	Master     *Server   // the master at the start; after a failover, Replica is
	Replica    *Server   // the master's replica at the start
	Sentinels  []*Server // the three sentinels, quorum 2
}

// StartSentinel starts a master, its replica and three sentinels monitoring the master as
// masterName, quick to react (down after 3s, failover timeout 3s). It returns once the replica is
// in sync and every sentinel knows the replica and the two other sentinels: from then on, a master
// killed is replaced by the replica within about 10 seconds. Down after 1s was too quick for a
// machine busy with make test: a master that did not answer for a second was failed over once
// more, onto the old master restarted empty, and every line was gone (seen in a CI run).
func StartSentinel(t testing.TB, masterName string) *Sentinel {
	t.Helper()
	// No diskless-sync delay: the default 5 s wait for more replicas only slows the start, and a
	// key written while that sync was closing once vanished in the failover (a CI run).
	master := Start(t, WithArgs("--repl-diskless-sync-delay", "0"))
	replica := Start(t, WithReplicaOf(master.Addr))
	st := &Sentinel{MasterName: masterName, Master: master, Replica: replica}
	_, masterPort, _ := net.SplitHostPort(master.Addr)
	for range 3 {
		s := newServer(t, "redis-sentinel")
		// A sentinel rewrites its configuration file (what it learned), so each has its own.
		s.conf = filepath.Join(s.Dir, "sentinel.conf")
		conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 2\n"+
			"sentinel down-after-milliseconds %[1]s 3000\n"+
			"sentinel failover-timeout %[1]s 3000\n"+
			"sentinel parallel-syncs %[1]s 1\n", masterName, masterPort)
		if err := os.WriteFile(s.conf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		s.start(t)
		st.Sentinels = append(st.Sentinels, s)
	}

	replica.WaitInSync(t)
	waitFor(t, "master "+master.Addr+" to count its replica online", func() error {
		reply, err := master.Do("INFO", "replication")
		if err != nil {
			return err
		}
		if text, _ := reply.(string); !strings.Contains(text, ",state=online,") {
			return fmt.Errorf("no replica online:\n%s", text)
		}
		return nil
	})
	for _, s := range st.Sentinels {
		waitFor(t, "sentinel "+s.Addr+" to know the replica and the other sentinels", func() error {
			reply, err := s.Do("SENTINEL", "MASTER", masterName)
			if err != nil {
				return err
			}
			fields, _ := reply.([]any)
			state := map[string]any{}
			for i := 0; i+1 < len(fields); i += 2 {
				state[fmt.Sprint(fields[i])] = fields[i+1]
			}
			if state["flags"] != "master" || state["num-slaves"] != "1" || state["num-other-sentinels"] != "2" {
				return fmt.Errorf("flags %v, num-slaves %v, num-other-sentinels %v", state["flags"], state["num-slaves"], state["num-other-sentinels"])
			}
			return nil
		})
	}
	return st
}

// Addrs are the sentinels' addresses, host:port.
func (st *Sentinel) Addrs() []string { return addrs(st.Sentinels) }

// WaitInSync waits until the server, a replica, has its link to its master up
// (master_link_status:up), and fails t after 20 seconds. A master restarted after a failover
// holds no data until then, and a failover onto it would lose every key.
func (s *Server) WaitInSync(t testing.TB) {
	t.Helper()
	waitFor(t, "replica "+s.Addr+" in sync with its master", func() error {
		return infoHas(s, "replication", "master_link_status:up")
	})
}

// CurrentMaster is the master's address, host:port, according to the first sentinel that answers.
func (st *Sentinel) CurrentMaster(t testing.TB) string {
	t.Helper()
	var errs []error
	for _, s := range st.Sentinels {
		reply, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", st.MasterName)
		if hostPort, ok := reply.([]any); err == nil && ok && len(hostPort) == 2 {
			return net.JoinHostPort(fmt.Sprint(hostPort[0]), fmt.Sprint(hostPort[1]))
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %v, %v", s.Addr, reply, err))
	}
	t.Fatalf("no sentinel tells the master %s: %v", st.MasterName, errors.Join(errs...))
	return ""
}

// Cluster is a Redis cluster of masters without replicas, all local processes.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n cluster nodes (at least 3, as redis-cli requires), makes them a cluster
// sharing the 16384 slots with redis-cli --cluster create, and returns once every node says the
// cluster is ok.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	cli := requireBinary(t, "redis-cli")
	c := &Cluster{}
	for range n {
		s := newServer(t, "redis-server")
		s.busPort = true
		s.extra = []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"),
			"--cluster-node-timeout", "2000"}
		s.start(t)
		c.Nodes = append(c.Nodes, s)
	}

	args := append(append([]string{"--cluster", "create"}, c.Addrs()...), "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, s := range c.Nodes {
		waitFor(t, "node "+s.Addr+" to say cluster_state:ok", func() error { return infoHas(s, "cluster", "cluster_state:ok") })
	}
	return c
}

// Addrs are the nodes' addresses, host:port.
func (c *Cluster) Addrs() []string { return addrs(c.Nodes) }

func addrs(servers []*Server) []string {
	var a []string
	for _, s := range servers {
		a = append(a, s.Addr)
	}
	return a
}

// waitFor polls cond every 50 ms until it returns nil, and fails t with its last error after 20
// seconds.
func waitFor(t testing.TB, what string, cond func() error) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if err := cond(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		return nil
	})
}

// infoHas checks that INFO section (CLUSTER INFO for "cluster") of s has the line want, a
// field and its value ("master_link_status:up").
func infoHas(s *Server, section, want string) error {
	fields, text, err := infoFields(s, section)
	if err != nil {
		return err
	}
	if field, value, _ := strings.Cut(want, ":"); fields[field] == value {
		return nil
	}
	return fmt.Errorf("INFO %s has no %s:\n%s", section, want, text)
}

// infoFields is the fields of INFO section (CLUSTER INFO for "cluster") of s, by name, and the
// reply's text.
func infoFields(s *Server, section string) (map[string]string, string, error) {
	args := []string{"INFO", section}
	if section == "cluster" {
		args = []string{"CLUSTER", "INFO"}
	}
	reply, err := s.Do(args...)
	if err != nil {
		return nil, "", err
	}
	text, _ := reply.(string)
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields, text, nil
}

// Error is an error reply of Redis, such as "NOAUTH Authentication required.".
type Error string

func (e Error) Error() string { return string(e) }

// Do sends one command to the server at addr on a new connection and returns its reply: a string
// (simple or bulk), an int64, nil (null), a []any (array), or an Error (an error reply; in an
// array, an element).
func Do(addr string, args ...string) (any, error) { return do(addr, "", args) }

// Do is Do on the server, authenticated first if it has a password.
func (s *Server) Do(args ...string) (any, error) { return do(s.Addr, s.Password, args) }

func do(addr, password string, args []string) (any, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	if password != "" {
		if _, err := command(conn, r, "AUTH", password); err != nil {
			return nil, err
		}
	}
	return command(conn, r, args...)
}

// command writes args as a RESP array of bulk strings and reads the reply.
func command(w io.Writer, r *bufio.Reader, args ...string) (any, error) {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	return readReply(r)
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("malformed reply %q", line)
	}
	text := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return text, nil
	case '-':
		return nil, Error(text)
	case ':':
		return strconv.ParseInt(text, 10, 64)
	case '$', '*':
		n, err := strconv.Atoi(text)
		if err != nil {
			return nil, fmt.Errorf("malformed reply %q", line)
		}
		if n < 0 {
			return nil, nil
		}
		if line[0] == '$' {
			b := make([]byte, n+2) // and its \r\n
			if _, err := io.ReadFull(r, b); err != nil {
				return nil, err
			}
			return string(b[:n]), nil
		}
		array := make([]any, n)
		for i := range array {
			v, err := readReply(r)
			var e Error
			if errors.As(err, &e) {
				v = e
			} else if err != nil {
				return nil, err
			}
			array[i] = v
		}
		return array, nil
	}
	return nil, fmt.Errorf("unknown reply type %q", line)
}
