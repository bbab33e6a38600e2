package redis

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// A table server is a good tenant of a Redis it shares with other applications: no command it
// sends runs longer than redistest.SlowCommand, whatever the size of the lists, since Redis runs
// one command at a time and every other client waits meanwhile. The guard runs every command of
// the protocol on lists of a million lines (ten million in make bench) against a redis-server
// that logs each command over that bound, and fails on any entry of the table server's
// connections (named ClientName) that comes back each time the step runs again (guardRuns): a
// command whose work grows with the list is slow every time, where a machine busy with other
// work (make test's parallel packages) stalls a command now and then, whatever it is. For the same
// reason, a command (a script, by its SHA) sent a hundred times or more in a step may be over the
// bound in one call of two hundred, by four times the bound at most (stalls): one whose work
// grows is over it in every call.

// TestNoCommandBlocksRedis is the guard at a million lines.
func TestNoCommandBlocksRedis(t *testing.T) {
	if testing.Short() {
		testutil.Skip(t, "loads a million lines into a redis-server")
	}
	everyCommandAtScale(t, guardScale{lines: 1_000_000, lists: 10_000, leases: 100_000}, nil)
}

// BenchmarkNoCommandBlocksRedis10M is the guard at ten million lines, run once, which reports
// what each protocol command cost Redis (INFO commandstats): "<step>-<command>-calls" and
// "<step>-<command>-us/call".
func BenchmarkNoCommandBlocksRedis10M(b *testing.B) {
	for range b.N {
		everyCommandAtScale(b, guardScale{lines: 10_000_000, lists: 10_000, leases: 100_000}, func(step string, stats map[string]redistest.CommandStat) {
			for cmd, st := range stats {
				if !guardOwn[cmd] && st.Calls > 0 {
					b.ReportMetric(float64(st.Calls), step+"-"+cmd+"-calls")
					b.ReportMetric(st.UsecPerCall(), step+"-"+cmd+"-us/call")
				}
			}
		})
	}
}

// stalls reports whether entries, the calls over the bound of a command sent n times in a step,
// look like a busy machine's stalls rather than work that grows: one in two hundred calls at
// most, none over four times the bound. A machine at a load average of 14 stalled 3 of 2 024
// steps of an index's build to 5-12 ms; work that grows with a list of a million lines is over
// the bound in every call, or far over it in the one call that does it.
func stalls(entries []redistest.SlowEntry, n int) bool {
	if len(entries) > max(1, n/200) {
		return false
	}
	for _, e := range entries {
		if e.Took > 4*redistest.SlowCommand {
			return false
		}
	}
	return true
}

// guardOwn are the commands the guard itself sends between steps.
var guardOwn = map[string]bool{"config|resetstat": true, "info": true, "slowlog|get": true, "slowlog|reset": true, "latency|latest": true, "latency|reset": true}

// guardScale is how big the guard's lists are: lines in the long list, lists for STATUS, and
// leases that expire together.
type guardScale struct{ lines, lists, leases int }

// everyCommandAtScale runs each protocol command on lists of sc's size and fails t when Redis
// logged a command of the store's that ran longer than redistest.SlowCommand, twice. report, when
// not nil, is given the commands that each step sent (INFO commandstats).
func everyCommandAtScale(t testing.TB, sc guardScale, report func(step string, stats map[string]redistest.CommandStat)) {
	srv := redistest.Start(t, redistest.WithPriority())
	if srv.PriorityErr != nil {
		t.Logf("redis-server runs at the machine's priority (%v): on a busy machine, the SLOWLOG may count the time it waited for a processor", srv.PriorityErr)
	}
	client, err := Connection{URL: srv.URL()}.Client()
	if err != nil {
		t.Fatal(err)
	}
	calls := &commandCounter{}
	client.AddHook(calls)
	s, err := New(Options{Client: client, KeyPrefix: "guard:", HealthInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "Redis to answer", s.Up)
	ctx := t.Context()
	lines := guardLines("l", sc.lines)
	fresh := 0
	freshLines := func(n int) []string {
		fresh++
		return guardLines(fmt.Sprintf("f%d-", fresh), n)
	}

	// slow runs measure and returns what the store sent over the bound meanwhile.
	slow := func(name string, measure func() error) []string {
		t.Helper()
		srv.SlowLog(t)
		srv.Latency(t)
		srv.CommandStats(t)
		calls.reset()
		start := time.Now()
		if err := measure(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		took := time.Since(start)
		slowCalls := map[string][]redistest.SlowEntry{}
		for _, e := range srv.SlowLog(t) {
			if e.Client == ClientName {
				key := commandKey(e.Args)
				slowCalls[key] = append(slowCalls[key], e)
			}
		}
		var over []string
		for key, entries := range slowCalls {
			if n := calls.of(key); n < 100 || !stalls(entries, n) {
				for _, e := range entries {
					over = append(over, e.String())
				}
			} else {
				t.Logf("%s: %d of %d calls of %s over %v, taken for the machine's", name, len(entries), n, key, redistest.SlowCommand)
			}
		}
		if events := srv.Latency(t); len(events) > 0 {
			t.Logf("%s: latency events beyond %v: %s", name, redistest.SlowCommand, strings.Join(events, "; "))
		}
		stats := srv.CommandStats(t)
		t.Logf("%s: %v, %s", name, took.Round(time.Millisecond), summary(stats))
		if report != nil {
			report(strings.ReplaceAll(name, " ", "_"), stats)
		}
		return over
	}
	// step runs measure on the lists as the steps before left them; when the store sent a
	// command over the bound, it makes the lists so again with again (none: they are), and runs
	// measure again, up to guardRuns times.
	step := func(name string, measure, again func() error) {
		t.Helper()
		over := slow(name, measure)
		for run := 2; len(over) > 0; run++ {
			if run > guardRuns {
				t.Errorf("%s blocked Redis for more than %v, in each of %d runs (%d commands in the last):\n%s", name, redistest.SlowCommand, guardRuns, len(over), strings.Join(over, "\n"))
				return
			}
			t.Logf("%s: %d commands over %v, the step runs again:\n%s", name, len(over), redistest.SlowCommand, strings.Join(over, "\n"))
			if again != nil {
				if err := again(); err != nil {
					t.Fatalf("%s, before it runs again: %v", name, err)
				}
			}
			over = slow(fmt.Sprintf("%s, run %d", name, run), measure)
		}
	}
	// collected waits until the structures a change dropped are emptied (its server does it in
	// the background, in steps): they belong to the change's step.
	collected := func() error {
		return waitUntil(10*time.Minute, func() (bool, error) {
			n, err := srv.Do("EXISTS", "guard:{big}:garbage")
			return n == int64(0), err
		})
	}
	load := func() error {
		if err := s.Replace(ctx, "big", lines, ""); err != nil {
			return err
		}
		return collected()
	}
	// The first UNIQUE ADD answers before the index is built; the build's steps belong to its
	// step.
	uniqueAdd := func() error {
		start := time.Now()
		if err := s.Add(ctx, "big", freshLines(1)[0], store.Last, true); err != nil {
			return err
		}
		t.Logf("a UNIQUE ADD answered in %v", time.Since(start).Round(time.Millisecond))
		return waitUntil(10*time.Minute, func() (bool, error) {
			n, err := srv.Do("HEXISTS", "guard:{big}:meta", "building")
			return n == int64(0), err
		})
	}

	step("LOAD REPLACE", load, nil)
	step("ADD UNIQUE first", uniqueAdd, load)
	step("ADD UNIQUE", func() error {
		if err := s.Add(ctx, "big", lines[len(lines)/2], store.Last, true); err != store.ErrDuplicate {
			return fmt.Errorf("a line of the list added again: %v, want %v", err, store.ErrDuplicate)
		}
		return s.Add(ctx, "big", freshLines(1)[0], store.First, true)
	}, nil)
	step("READ RANDOM", func() error {
		return times(200, func(int) error { _, err := s.Read(ctx, "big", store.Random, 1, false, 0); return err })
	}, nil)
	step("READ RANDOM KEEP", func() error {
		return times(200, func(int) error { _, err := s.Read(ctx, "big", store.Random, 1, true, 0); return err })
	}, nil)
	step("READ FIRST and LAST", func() error {
		return times(200, func(i int) error { _, err := s.Read(ctx, "big", store.Position(i%2), 3, i%4 < 2, 0); return err })
	}, nil)
	needle := func() error { return s.Add(ctx, "big", "needle", store.Last, false) }
	must(t, needle())
	step("FIND at the end", func() error {
		found, err := s.Find(ctx, "big", func(line string) (bool, error) { return line == "needle", nil }, false, 0)
		if err == nil && found != "needle" {
			err = fmt.Errorf("found %q", found)
		}
		return err
	}, needle)
	// A LOAD FIRST or LAST adds the ids of the chunks it brings to the list's directory in one
	// step: as many as a body of the default --max-body-bytes (16 MiB) holds lines of 20 bytes.
	loaded := min(sc.lines/4, 16<<20/21)
	step("LOAD FIRST", func() error { return s.Insert(ctx, "big", freshLines(loaded), store.First) }, nil)
	step("LENGTH", func() error { _, err := s.Length(ctx, "big"); return err }, nil)
	step("PAGE in the middle", func() error {
		n, err := s.Length(ctx, "big")
		if err != nil {
			return err
		}
		page, _, err := s.Page(ctx, "big", n/2, 100)
		if err == nil && len(page) != 100 {
			err = fmt.Errorf("a page of %d lines", len(page))
		}
		return err
	}, nil)
	step("SAVE and EXPORT", func() error {
		all, err := s.Lines(ctx, "big")
		if err == nil && len(all) < sc.lines {
			err = fmt.Errorf("%d lines", len(all))
		}
		return err
	}, nil)
	// LOAD LAST into a list whose index is built leaves the lines it brought to be counted, by
	// the next UNIQUE ADD.
	loadLast := func() error { return s.Insert(ctx, "big", freshLines(loaded), store.Last) }
	step("LOAD LAST", loadLast, nil)
	step("ADD UNIQUE after LOAD", uniqueAdd, loadLast)

	// leased is how many leases takeLeases took that RELOAD has not ended: RELOAD ends them all,
	// and takeLeases takes them again before a RELOAD runs again, so that each run ends as many.
	// Reload counts the lines the leases held: one each here.
	leased := 0
	takeLeases := func() error {
		spec := store.LeaseSpec{TTL: time.Hour, MaxDeliveries: 1}
		err := parallel(guardLeasesTaken, func(int) error { _, err := s.ReadLeased(ctx, "big", store.First, 1, spec, 0); return err })
		if err == nil {
			leased += guardLeasesTaken
		}
		return err
	}
	step("leases taken", takeLeases, nil)
	dead := store.DeadLetterList("big")
	// deadBefore is the dead-letter list's length before the leases were held: read then, since
	// the expiry may begin before the step does.
	deadBefore := 0
	expiring := func() error {
		info, err := listInfo(ctx, s, dead)
		if err != nil {
			return err
		}
		deadBefore = info.Length
		return holdExpiredLeases(srv, "guard:{big}", sc.leases)
	}
	must(t, expiring())
	step("lease expiry", func() error {
		// Every lease has run out: the expiry loop gives them back, all of them dead letters
		// (MaxDeliveries 1), once told the list is due. The step ends when the mover has let go
		// of the dead letters' claim too, its last script: a run that starts again meanwhile
		// would have that mover expire its new leases before it counts them.
		if err := s.schedule(ctx, "big", 0, ""); err != nil {
			return err
		}
		want := deadBefore + sc.leases
		var got int
		err := waitUntil(2*time.Minute, func() (bool, error) {
			info, err := listInfo(ctx, s, dead)
			got = info.Length
			if err != nil || got < want {
				return false, err
			}
			claimed, err := srv.Do("HEXISTS", "guard:{big}:meta", "deadClaim")
			return claimed == int64(0), err
		})
		if err == nil && got != want {
			err = fmt.Errorf("%d dead letters, %d more than the leases held", got-deadBefore, got-want)
		}
		if err != nil {
			return fmt.Errorf("%w; %d of %d leases dead-lettered, %s", err, got-deadBefore, sc.leases, expiryState(srv, "guard:", "big"))
		}
		return nil
	}, expiring)
	must(t, parallel(sc.lists, func(i int) error { return s.Ensure(ctx, fmt.Sprintf("list-%05d", i)) }))
	step("STATUS", func() error {
		infos, err := s.Lists(ctx)
		if err == nil && len(infos) < sc.lists {
			err = fmt.Errorf("%d lists", len(infos))
		}
		return err
	}, nil)
	step("RELOAD", func() error {
		ended, err := s.Reload(ctx, "big", lines, "")
		if err != nil {
			return err
		}
		if ended != leased {
			return fmt.Errorf("RELOAD ended %d leases, want the %d held", ended, leased)
		}
		leased = 0
		return collected()
	}, takeLeases)
	step("RESET", func() error {
		for _, name := range []string{"big", dead} {
			if _, err := s.Reset(ctx, name); err != nil {
				return err
			}
		}
		return nil
	}, load)
}

// holdExpiredLeases puts n leases of a line each, which ran out, in the list whose key is list,
// with MaxDeliveries 1, as the lease scripts write them (lease.go): quicker than n leased READs,
// for a guard that needs many leases running out at once. Their lines are new ones. Like a lease
// script, it records in meta "due" that the list is due from their expiry on (0): the expiry
// loop's sweep reports that field to the schedule, and one that still said when the leases held
// before ran out (an hour on) put the list back there, whatever the guard had scheduled.
func holdExpiredLeases(srv *redistest.Server, list string, n int) error {
	const script = `
local list, from, n = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
for i = from, from + n - 1 do
  local id = 'guard' .. i
  redis.call('HSET', list .. ':leases', id, cmsgpack.pack(1, {'leased ' .. i}, -1))
  redis.call('ZADD', list .. ':expires', 0, id)
end
redis.call('HINCRBY', list .. ':meta', 'leased', n)
redis.call('HSET', list .. ':meta', 'due', 0)
return n
`
	held++
	for from := 0; from < n; from += 2000 {
		if _, err := srv.Do("EVAL", script, "1", list, strconv.Itoa(held*n+from), strconv.Itoa(min(2000, n-from))); err != nil {
			return err
		}
	}
	return nil
}

// held numbers the calls of holdExpiredLeases, whose lease ids must not repeat.
var held int

// expiryState is what the guard reads of the leases and dead letters of list name, of a store of
// key prefix prefix, when their expiry does not end as it should.
func expiryState(srv *redistest.Server, prefix, name string) string {
	list := prefix + "{" + name + "}"
	var state []string
	for _, c := range [][]string{{"HLEN", list + ":leases"}, {"ZCARD", list + ":expires"}, {"LLEN", list + ":dead"},
		{"HMGET", list + ":meta", "due", "deadClaim", "leased"}, {"ZSCORE", prefix + "leases-due", name}, {"EXISTS", list + ":garbage"}} {
		v, err := srv.Do(c...)
		if err != nil {
			v = err
		}
		state = append(state, fmt.Sprintf("%s: %v", strings.Join(c, " "), v))
	}
	return strings.Join(state, ", ")
}

// guardLeasesTaken is how many leases a run of the guard's "leases taken" step takes, which the
// expiry step leaves held and RELOAD ends.
const guardLeasesTaken = 5000

// guardRuns is how many times a step runs at most while the store sends a command over the
// bound: a machine busy with other work can stall a few commands of every run of a step.
const guardRuns = 3

// guardClients is how many goroutines make the guard's many calls: enough to keep Redis busy,
// few enough to leave it a processor on a machine of two.
const guardClients = 8

// commandCounter is a go-redis hook that counts the commands sent, by commandKey.
type commandCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *commandCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = map[string]int{}
}

func (c *commandCounter) of(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[key]
}

func (c *commandCounter) count(cmds ...goredis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	for _, cmd := range cmds {
		args := make([]string, 0, 2)
		for _, a := range cmd.Args()[:min(2, len(cmd.Args()))] {
			args = append(args, fmt.Sprint(a))
		}
		c.calls[commandKey(args)]++
	}
}

func (c *commandCounter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *commandCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.count(cmds...)
		return next(ctx, cmds)
	}
}

// commandKey names a command by its arguments: a script by its SHA, another command by its name.
func commandKey(args []string) string {
	if len(args) >= 2 && strings.EqualFold(args[0], "evalsha") {
		return "evalsha " + args[1]
	}
	if len(args) == 0 {
		return ""
	}
	return strings.ToLower(args[0])
}

// guardLines are n distinct lines of 20 bytes starting with prefix.
func guardLines(prefix string, n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("%s%0*d", prefix, 20-len(prefix), i)
	}
	return lines
}

// times calls f n times in turn, until one fails.
func times(n int, f func(i int) error) error {
	for i := range n {
		if err := f(i); err != nil {
			return err
		}
	}
	return nil
}

// parallel calls f n times from guardClients goroutines and returns one of their errors.
func parallel(n int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range guardClients {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && failed.Load() == nil; i = next.Add(1) - 1 {
				if err := f(int(i)); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

// waitUntil polls cond until it holds, fails, or limit passes.
func waitUntil(limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listInfo is STATUS's line of list name.
func listInfo(ctx context.Context, s *Store, name string) (store.ListInfo, error) {
	infos, err := s.Lists(ctx)
	for _, info := range infos {
		if info.Name == name {
			return info, err
		}
	}
	return store.ListInfo{}, err
}

// summary is what the commands of a step cost Redis: calls and µs per call of each.
func summary(stats map[string]redistest.CommandStat) string {
	var parts []string
	for cmd, st := range stats {
		if guardOwn[cmd] {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d×%.0fµs", cmd, st.Calls, st.UsecPerCall()))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// must fails t on an error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
