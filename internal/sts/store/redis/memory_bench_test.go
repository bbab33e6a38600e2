package redis

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// BenchmarkMemoryPerLine measures what a line of 20 bytes costs Redis in a list of a million, in
// the backend's chunks (scripts.go) against one plain LIST of the same lines, on one
// redis-server: MEMORY USAGE (SAMPLES 0, every element) of the list's keys, summed, and
// used_memory before and after, which counts the keyspace's own entries too. Metrics:
// "chunked-bytes/line", "plain-bytes/line", "x-plain" (MEMORY USAGE), "used-x-plain"
// (used_memory), and "index-bytes/line", what the unique index adds once a UNIQUE ADD built it.
func BenchmarkMemoryPerLine(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a redis-server")
	}
	ctx := context.Background()
	const n = 1_000_000
	lines := guardLines("l", n)
	for range b.N {
		// A redis-server of its own each time: used_memory counts nothing else.
		srv := redistest.Start(b)
		s := open(b, Connection{URL: srv.URL()}, "mem:", store.Limits{})
		used := memoryInfo(b, srv, "used_memory")
		if err := s.Replace(ctx, "chunked", lines, ""); err != nil {
			b.Fatal(err)
		}
		chunkedUsed := memoryInfo(b, srv, "used_memory") - used
		k := s.keysOf("chunked")
		ids, err := s.cmd.LRange(ctx, k.chunks(), 0, -1).Result()
		if err != nil {
			b.Fatal(err)
		}
		keys := []string{k.list, k.chunks(), k.meta()}
		for _, id := range ids {
			keys = append(keys, k.chunk(id))
		}
		chunked := memoryUsage(b, s.client, keys)

		used = memoryInfo(b, srv, "used_memory")
		for i := 0; i < n; i += 1000 {
			if err := s.cmd.RPush(ctx, "plain", toAny(lines[i:i+1000])...).Err(); err != nil {
				b.Fatal(err)
			}
		}
		plainUsed := memoryInfo(b, srv, "used_memory") - used
		plain := memoryUsage(b, s.client, []string{"plain"})

		if err := s.Add(ctx, "chunked", "a line new to the list", store.Last, true); err != nil {
			b.Fatal(err)
		}
		if err := waitUntil(5*time.Minute, func() (bool, error) {
			n, err := s.cmd.HExists(ctx, k.meta(), "sharded").Result()
			return n, err
		}); err != nil {
			b.Fatalf("the index was not built: %v", err)
		}
		var shards []string
		for i := range indexShards {
			shards = append(shards, k.list+":unique:"+strconv.Itoa(i))
		}
		index := memoryUsage(b, s.client, shards)

		b.ReportMetric(float64(chunked)/n, "chunked-bytes/line")
		b.ReportMetric(float64(plain)/n, "plain-bytes/line")
		b.ReportMetric(float64(chunked)/float64(plain), "x-plain")
		b.ReportMetric(float64(chunkedUsed)/float64(plainUsed), "used-x-plain")
		b.ReportMetric(float64(index)/n, "index-bytes/line")
		_ = s.Close()
		srv.Stop()
	}
}

// memoryInfo is the field of INFO memory (used_memory, lazyfreed_objects, ...).
func memoryInfo(t testing.TB, srv *redistest.Server, field string) int64 {
	t.Helper()
	reply, err := srv.Do("INFO", "memory")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := reply.(string)
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO memory has no %s:\n%s", field, text)
	return 0
}

// memoryUsage sums MEMORY USAGE of keys, every element sampled.
func memoryUsage(b *testing.B, client goredis.UniversalClient, keys []string) int64 {
	b.Helper()
	ctx := context.Background()
	pipe := client.Pipeline()
	cmds := make([]*goredis.IntCmd, len(keys))
	for i, key := range keys {
		cmds[i] = pipe.MemoryUsage(ctx, key, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != goredis.Nil {
		b.Fatal(err)
	}
	var total int64
	for _, cmd := range cmds {
		total += cmd.Val()
	}
	return total
}
