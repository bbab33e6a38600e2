package redistest

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
)

// BenchmarkRoundTrip measures what a round trip costs Redis, whatever it carries: the Redis CPU
// time of a PING sent alone and answered before the next ("round-trip-cpu-us"), against a PING
// in pipelines of 100 ("pipelined-cpu-us"), and their ratio ("x-pipelined"): what a client that
// waits for each answer costs Redis beyond its commands. BenchmarkRedisReadFirstVsLPOPHandler
// reports how many requests of the table server and of its ceiling share a read of Redis.
func BenchmarkRoundTrip(b *testing.B) {
	// Each window costs Redis a few hundred milliseconds, beside which the INFO calls that
	// measure it are noise.
	const (
		alonePings     = 20_000
		pipelinedPings = 1_000_000
		depth          = 100
	)
	s := Start(b)
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	replies := bufio.NewReader(conn)
	// send writes n PINGs at once and reads their n answers.
	send := func(n int) {
		if _, err := io.WriteString(conn, strings.Repeat("PING\r\n", n)); err != nil {
			b.Fatal(err)
		}
		for range n {
			if line, err := replies.ReadString('\n'); err != nil || line != "+PONG\r\n" {
				b.Fatalf("PING answered %q, %v", line, err)
			}
		}
	}
	b.ResetTimer()
	var alone, pipelined float64
	for range b.N {
		_, cpu := s.Costs(b, func() float64 {
			for range alonePings {
				send(1)
			}
			return 0
		})
		alone += cpu
		_, cpu = s.Costs(b, func() float64 {
			for range pipelinedPings / depth {
				send(depth)
			}
			return 0
		})
		pipelined += cpu
	}
	b.StopTimer()
	alone *= 1e6 / float64(b.N*alonePings)
	pipelined *= 1e6 / float64(b.N*pipelinedPings)
	b.ReportMetric(alone, "round-trip-cpu-us")
	b.ReportMetric(pipelined, "pipelined-cpu-us")
	b.ReportMetric(alone/pipelined, "x-pipelined")
}
