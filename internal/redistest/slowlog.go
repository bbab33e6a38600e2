package redistest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// SlowCommand is the longest a command may take on a Redis shared with other applications
// before it stalls them: every server Start runs records the commands that take longer in its
// SLOWLOG, and latency events beyond it in LATENCY.
const SlowCommand = 5 * time.Millisecond

// SlowEntry is one SLOWLOG entry: a command that took more than SlowCommand.
type SlowEntry struct {
	Took   time.Duration
	Args   []string // as Redis keeps them: long arguments and long lists of them cut
	Client string   // the connection's name (CLIENT SETNAME); "" for none, or a script's own command
}

func (e SlowEntry) String() string {
	return fmt.Sprintf("%v by %q: %s", e.Took, e.Client, strings.Join(e.Args, " "))
}

// SlowLog returns the server's SLOWLOG entries, the newest first, and empties it.
func (s *Server) SlowLog(t testing.TB) []SlowEntry {
	t.Helper()
	reply, err := s.Do("SLOWLOG", "GET", "-1")
	if err != nil {
		t.Fatalf("SLOWLOG GET: %v", err)
	}
	items, _ := reply.([]any)
	entries := make([]SlowEntry, 0, len(items))
	for _, item := range items {
		// id, timestamp, microseconds, arguments, client address, client name.
		fields, _ := item.([]any)
		if len(fields) < 4 {
			t.Fatalf("SLOWLOG entry %v", item)
		}
		us, _ := fields[2].(int64)
		e := SlowEntry{Took: time.Duration(us) * time.Microsecond}
		args, _ := fields[3].([]any)
		for _, a := range args {
			e.Args = append(e.Args, fmt.Sprint(a))
		}
		if len(fields) >= 6 {
			e.Client, _ = fields[5].(string)
		}
		entries = append(entries, e)
	}
	if _, err := s.Do("SLOWLOG", "RESET"); err != nil {
		t.Fatalf("SLOWLOG RESET: %v", err)
	}
	return entries
}

// Latency returns the server's LATENCY LATEST events beyond SlowCommand, one line each ("event:
// latest ms, max ms"), and resets them.
func (s *Server) Latency(t testing.TB) []string {
	t.Helper()
	reply, err := s.Do("LATENCY", "LATEST")
	if err != nil {
		t.Fatalf("LATENCY LATEST: %v", err)
	}
	items, _ := reply.([]any)
	var events []string
	for _, item := range items {
		// event, timestamp, latest ms, all-time max ms.
		if f, _ := item.([]any); len(f) >= 4 {
			events = append(events, fmt.Sprintf("%v: latest %v ms, max %v ms", f[0], f[2], f[3]))
		}
	}
	if _, err := s.Do("LATENCY", "RESET"); err != nil {
		t.Fatalf("LATENCY RESET: %v", err)
	}
	return events
}

// CommandStat is what INFO commandstats says of one command since the last reset.
type CommandStat struct {
	Calls int64
	Usec  int64 // microseconds spent in all its calls
}

// UsecPerCall is the mean time of one call, in microseconds.
func (c CommandStat) UsecPerCall() float64 {
	if c.Calls == 0 {
		return 0
	}
	return float64(c.Usec) / float64(c.Calls)
}

// CommandStats returns INFO commandstats by command name (lower case, "evalsha"), and resets
// them (CONFIG RESETSTAT), so that the next call tells what ran in between.
func (s *Server) CommandStats(t testing.TB) map[string]CommandStat {
	t.Helper()
	all, _, err := infoFields(s, "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	stats := map[string]CommandStat{}
	for field, fields := range all {
		name, ok := strings.CutPrefix(field, "cmdstat_")
		if !ok {
			continue
		}
		var c CommandStat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				_, _ = fmt.Sscan(v, &c.Calls)
			case "usec":
				_, _ = fmt.Sscan(v, &c.Usec)
			}
		}
		stats[name] = c
	}
	if _, err := s.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
	return stats
}
