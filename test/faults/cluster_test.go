package faults

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/stsproc"
)

// stsServer is one sts of a cluster, on a port that stays its own across restarts: clients know
// servers by address, as a load balancer's list does.
type stsServer struct {
	port int
	base string
	args []string
	proc *stsproc.Process
}

func (s *stsServer) start(t *testing.T) {
	t.Helper()
	s.proc = stsproc.Start(t, binary, s.port, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--log-format", "json"}, s.args...)...)
}

func (s *stsServer) kill(t *testing.T) {
	t.Helper()
	s.proc.Signal(t, syscall.SIGKILL)
	<-s.proc.Exited()
}

// cluster is the sts servers of one backend and what they run on.
type cluster struct {
	backend  string
	servers  []*stsServer
	redis    *redistest.Server   // the standalone Redis
	proxy    *toxiproxy.Proxy    // between the servers and the standalone Redis
	sentinel *redistest.Sentinel // the master, its replica and three sentinels
}

func (c *cluster) bases() []string {
	var b []string
	for _, s := range c.servers {
		b = append(b, s.base)
	}
	return b
}

// startServers starts n sts with args, and returns once all are ready: started together, as a
// Deployment's replicas are.
func startServers(t *testing.T, n int, args ...string) []*stsServer {
	t.Helper()
	servers := make([]*stsServer, n)
	for i := range servers {
		port := stsproc.StablePort(t)
		servers[i] = &stsServer{port: port, base: "http://127.0.0.1:" + strconv.Itoa(port), args: args}
		servers[i].start(t)
	}
	for _, s := range servers {
		s.proc.WaitReady(t)
	}
	return servers
}

// redisCluster is n sts on one Redis that writes every change to its AOF before answering
// (appendonly yes, appendfsync always: a SIGKILL loses nothing acknowledged), reached through
// Toxiproxy, which the network nemeses degrade.
func redisCluster(t *testing.T, n int, args ...string) *cluster {
	t.Helper()
	r := redistest.Start(t, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	proxy := startProxy(t, r.Addr)
	servers := startServers(t, n, append([]string{"--redis-url", "redis://" + proxy.Listen + "/0"}, args...)...)
	return &cluster{backend: "redis", servers: servers, redis: r, proxy: proxy}
}

// sentinelCluster is n sts finding their master through three sentinels, a change acknowledged
// only once the replica holds it (--redis-min-replicas 1): without it, a failover loses
// acknowledged changes, which no retry can bring back.
func sentinelCluster(t *testing.T, n int) *cluster {
	t.Helper()
	st := redistest.StartSentinel(t, "sts")
	servers := startServers(t, n, "--redis-url", "redis://"+st.Master.Addr+"/0", "--redis-sentinel-master", st.MasterName,
		"--redis-sentinel-addrs", strings.Join(st.Addrs(), ","), "--redis-min-replicas", "1")
	return &cluster{backend: "redis-sentinel", servers: servers, sentinel: st}
}

// memoryCluster is one sts keeping its lists in memory, with its journal (fsync before every
// answer) in a state directory: the one server a client of the memory backend has.
func memoryCluster(t *testing.T) *cluster {
	t.Helper()
	return &cluster{backend: "memory", servers: startServers(t, 1, "--state-dir", t.TempDir())}
}

// startProxy runs Toxiproxy in the test's process, from a loopback port to upstream.
func startProxy(t *testing.T, upstream string) *toxiproxy.Proxy {
	t.Helper()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := toxiproxy.NewProxy(server, "redis", "127.0.0.1:0", upstream)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	return proxy
}

// A nemesis injects one fault, holds it, and heals it: it returns once the system is whole
// again as an operator sees it (the process back and ready, the toxic gone, a new master with
// its replica in sync), the moment from which the clients' waits are measured.
type nemesis struct {
	name string
	run  func(t *testing.T, c *cluster, h *History, rng *rand.Rand) Window
}

// pauseHold is how long a Redis stays paused: past sts's Redis read timeout (3 s) and dial
// timeout (2 s), so that requests in flight lose their replies after Redis ran them.
const pauseHold = 6 * time.Second

var (
	redisPause = nemesis{"redis-pause", func(t *testing.T, c *cluster, h *History, _ *rand.Rand) Window {
		c.redis.Freeze(t)
		w := Window{Name: "redis-pause", Injected: h.Now()}
		time.Sleep(pauseHold)
		c.redis.Thaw(t)
		w.Healed = h.Now()
		return w
	}}
	redisKill = nemesis{"redis-kill", func(t *testing.T, c *cluster, h *History, _ *rand.Rand) Window {
		c.redis.Kill()
		w := Window{Name: "redis-kill", Injected: h.Now()}
		time.Sleep(time.Second)
		c.redis.Restart(t) // the same port, the AOF read back
		w.Healed = h.Now()
		return w
	}}
	stsKill = nemesis{"sts-kill", func(t *testing.T, c *cluster, h *History, rng *rand.Rand) Window {
		s := c.servers[rng.IntN(len(c.servers))]
		s.kill(t)
		w := Window{Name: "sts-kill", Injected: h.Now()}
		time.Sleep(500 * time.Millisecond)
		s.start(t)
		s.proc.WaitReady(t)
		w.Healed = h.Now()
		return w
	}}
	// stsKillForGood is the issue's: one sts SIGKILLed mid-run, the clients going on through
	// the others. It is healed when it is killed: nothing comes back.
	stsKillForGood = nemesis{"sts-kill-for-good", func(t *testing.T, c *cluster, h *History, rng *rand.Rand) Window {
		c.servers[rng.IntN(len(c.servers))].kill(t)
		now := h.Now()
		return Window{Name: "sts-kill-for-good", Injected: now, Healed: now}
	}}
	failover = nemesis{"sentinel-failover", func(t *testing.T, c *cluster, h *History, _ *rand.Rand) Window {
		st := c.sentinel
		master, replica := st.Master, st.Replica
		if st.CurrentMaster(t) == replica.Addr {
			master, replica = replica, master
		}
		master.Kill()
		w := Window{Name: "sentinel-failover", Injected: h.Now()}
		deadline := time.Now().Add(60 * time.Second)
		for st.CurrentMaster(t) != replica.Addr {
			if time.Now().After(deadline) {
				t.Fatalf("no failover to %s within 60 s", replica.Addr)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Only once failed over: a master restarted before it would come back empty as master
		// and its replica would copy it.
		failedOver := h.Now()
		master.Restart(t)
		// What the sentinels would tell it at their next look at it, 10 s or more later, with
		// --redis-min-replicas 1 refusing every change until then.
		// Without the 5 s a master waits for more replicas before a diskless full sync either.
		host, port, _ := net.SplitHostPort(replica.Addr)
		if _, err := replica.Do("CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil {
			t.Fatal(err)
		}
		if _, err := master.Do("REPLICAOF", host, port); err != nil {
			t.Fatal(err)
		}
		master.WaitInSync(t)
		w.Healed = h.Now()
		t.Logf("failover: %v to a new master, %v to the old one back in sync", (failedOver - w.Injected).Round(100*time.Millisecond), (w.Healed - failedOver).Round(100*time.Millisecond))
		return w
	}}
	// Network faults between sts and Redis, on every connection of the proxy, on the replies
	// (downstream): a reply lost is a command Redis ran. sts's health check fails its commands
	// fast within a second of a fault, so that only those in flight when it strikes are left
	// not knowing what ran: reset_peer strikes twice.
	toxiLatency = toxic("toxi-latency", `{"name":"f","type":"latency","stream":"downstream","attributes":{"latency":4000}}`, 4*time.Second, 1)
	toxiReset   = toxic("toxi-reset-peer", `{"name":"f","type":"reset_peer","stream":"downstream","attributes":{"timeout":0}}`, 1500*time.Millisecond, 2)
	toxiTimeout = toxic("toxi-timeout", `{"name":"f","type":"timeout","stream":"downstream","attributes":{"timeout":2500}}`, 4*time.Second, 1)
	toxiSlicer  = toxic("toxi-slicer", `{"name":"f","type":"slicer","stream":"downstream","attributes":{"average_size":8,"size_variation":6,"delay":300}}`, 3*time.Second, 1)
)

// toxic is the nemesis that adds the toxic of spec (named "f") to the proxy for hold, strikes
// times with a second between them: Redis comes back under sts's health check, and the next
// strike finds commands in flight again.
func toxic(name, spec string, hold time.Duration, strikes int) nemesis {
	return nemesis{name, func(t *testing.T, c *cluster, h *History, _ *rand.Rand) Window {
		w := Window{Name: name, Injected: h.Now()}
		for i := range strikes {
			if i > 0 {
				time.Sleep(time.Second)
			}
			if _, err := c.proxy.Toxics.AddToxicJson(strings.NewReader(spec)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(hold)
			if err := c.proxy.Toxics.RemoveToxic(context.Background(), "f"); err != nil {
				t.Fatal(err)
			}
		}
		w.Healed = h.Now()
		return w
	}}
}

// setups are the clusters TestNemeses runs, each with the nemeses it meets and its share of a
// campaign's cycles (per 200), so that each setup's run takes about the same time. The Redis
// nemeses are split over two clusters so that the campaign runs them side by side.
var setups = []struct {
	name    string
	start   func(t *testing.T) *cluster
	nemeses []nemesis
	share   int
}{
	{"redis-processes", func(t *testing.T) *cluster { return redisCluster(t, 3) }, []nemesis{redisPause, redisKill, stsKill}, 54},
	{"redis-network", func(t *testing.T) *cluster { return redisCluster(t, 3) }, []nemesis{toxiLatency, toxiReset, toxiTimeout, toxiSlicer}, 56},
	{"redis-sentinel", func(t *testing.T) *cluster { return sentinelCluster(t, 2) }, []nemesis{failover}, 45},
	{"memory", memoryCluster, []nemesis{stsKill}, 45},
}
