package redistest

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// cpu is the CPU time the server has used so far (INFO cpu: user and system, all its threads), in
// seconds: the difference over a run is what the run cost Redis.
func (s *Server) cpu(t testing.TB) float64 {
	t.Helper()
	return s.info(t, "cpu", "used_cpu_user", "used_cpu_sys")
}

// Reads is how many reads from its clients' connections the server has made so far (INFO stats'
// total_reads_processed): the difference over a run is its round trips, each of which costs
// Redis a wake-up and two system calls, whatever the commands it brings.
func (s *Server) Reads(t testing.TB) float64 {
	t.Helper()
	return s.info(t, "stats", "total_reads_processed")
}

// info is the sum of fields of an INFO section, each of which the server must report.
func (s *Server) info(t testing.TB, section string, fields ...string) float64 {
	t.Helper()
	all, text, err := infoFields(s, section)
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, field := range fields {
		v, ok := all[field]
		if !ok {
			t.Fatalf("INFO %s has no %s:\n%s", section, field, text)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("INFO %s %s:%s: %v", section, field, v, err)
		}
		total += f
	}
	return total
}

// Costs runs load, which returns the rate it achieved, and returns that rate with the Redis CPU
// time (seconds) the run cost: how benchmarks tell what a request costs Redis.
func (s *Server) Costs(t testing.TB, load func() float64) (rate, cpu float64) {
	t.Helper()
	before := s.cpu(t)
	rate = load()
	return rate, s.cpu(t) - before
}

// BenchmarkLPOP runs `redis-benchmark -t lpop` with clients connections for n requests on the
// server and returns its requests per second: the baseline the table server's figures are
// ratios of. It pops "mylist", which it fills first with 20-byte lines, so that every LPOP
// returns one (redis-benchmark alone would pop an empty list).
func (s *Server) BenchmarkLPOP(t testing.TB, clients, n int) float64 {
	t.Helper()
	path := requireBinary(t, "redis-benchmark")
	reply, err := s.Do("LLEN", "mylist")
	if err != nil {
		t.Fatal(err)
	}
	have, _ := reply.(int64)
	for missing := int64(n) + 1000 - have; missing > 0; missing -= 1000 {
		args := []string{"RPUSH", "mylist"}
		for i := range min(missing, 1000) {
			args = append(args, fmt.Sprintf("m%019d", have+i))
		}
		if _, err := s.Do(args...); err != nil {
			t.Fatal(err)
		}
		have += min(missing, 1000)
	}
	host, port, _ := strings.Cut(s.Addr, ":")
	cmd := exec.Command(path, "-h", host, "-p", port, "-t", "lpop", "-c", strconv.Itoa(clients), "-n", strconv.Itoa(n), "--csv")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, stderr.Bytes())
	}
	records, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	for _, rec := range records {
		if len(rec) >= 2 && rec[0] == "LPOP" {
			if rps, err := strconv.ParseFloat(rec[1], 64); err == nil && rps > 0 {
				return rps
			}
		}
	}
	t.Fatalf("redis-benchmark printed no LPOP requests per second (%v):\n%s", err, out)
	return 0
}
