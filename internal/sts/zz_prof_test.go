package sts

import (
	"strings"
	"testing"
)

func BenchmarkZZProf(b *testing.B) {
	rig := startRedisRig(b)
	ts := rig.server(b)
	client := keepAliveClient(benchConns)
	lineBody := len(okBody(strings.Repeat("0", redisLine)))
	const n = 200000
	lines := redisLines("", 0, n+1000)
	const read = "/sts/READ?FILENAME=drain&READ_MODE=FIRST&KEEP=FALSE"
	redisLoad(b, ts, "drain", lines)
	b.ResetTimer()
	rate := requestsPerSecond(b, client, ts.base+read, n, lineBody)
	b.ReportMetric(rate, "req/s")
}
