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
// in pipelines of 100 ("pipelined-cpu-us"), and their ratio ("x-pipelined"). A batch of reads
// pays the first once: the fewer round trips a request costs, the less Redis spends on it
// (BenchmarkRedisReadFirstVsLPOPHandler's requests per Redis read).
func BenchmarkRoundTrip(b *testing.B) {
	const (
		pings = 20_000
		depth = 100
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
			for range pings {
				send(1)
			}
			return 0
		})
		alone += cpu
		_, cpu = s.Costs(b, func() float64 {
			for range pings / depth {
				send(depth)
			}
			return 0
		})
		pipelined += cpu
	}
	b.StopTimer()
	perPing := 1e6 / float64(b.N*pings)
	b.ReportMetric(alone*perPing, "round-trip-cpu-us")
	b.ReportMetric(pipelined*perPing, "pipelined-cpu-us")
	b.ReportMetric(alone/pipelined, "x-pipelined")
}
