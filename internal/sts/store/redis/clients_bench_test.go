package redis

import (
	"context"
	"fmt"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// BenchmarkClientLibraries compares the Redis clients for Go on the table server's hot path, from
// benchClients goroutines on one redis-server, alternating redisRounds times: one LPOP a call,
// and one EVALSHA a call of a script that pops a line (what a READ is to Redis, without the
// backend's own work). Clients: go-redis v9 with its connection pool (one round trip a call),
// go-redis with AutoPipeline (the backend's, Connection.Client's options), rueidis with its own
// pipelining, retries off as the backend needs (a command sent whose answer is lost may have
// consumed a line). Metrics: each one's calls per second, and "x-goredis-autopipeline", its rate
// over the backend's client's.
//
// What keeps go-redis beyond its rate: one set of options for standalone, Sentinel and Cluster
// (UniversalClient), Script's fallback from EVALSHA to EVAL, MaxRetries -1 honoured for scripts
// (rueidis has DisableRetry too, Sentinel and Cluster too).
func BenchmarkClientLibraries(b *testing.B) {
	if testing.Short() {
		b.Skip("starts a redis-server")
	}
	srv := redistest.Start(b)
	ctx := context.Background()
	const rounds = 3
	n := max(b.N, 20_000)
	pop := goredis.NewScript("return redis.call('LPOP', KEYS[1])")

	pool, err := goredis.ParseURL(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	pooled := goredis.NewClient(pool)
	b.Cleanup(func() { _ = pooled.Close() })
	universal, err := Connection{URL: srv.URL()}.Client()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = universal.Close() })
	autopipelined, err := universal.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableRetry: true, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rue.Close)
	rueScript := rueidis.NewLuaScript("return redis.call('LPOP', KEYS[1])")

	// Each client pops its own list, filled with as many lines as it pops.
	fill := func(key string) {
		b.Helper()
		lines := make([]any, 1000)
		for i := range lines {
			lines[i] = fmt.Sprintf("%020d", i)
		}
		for range (2*rounds*n)/len(lines) + 1 {
			if err := pooled.RPush(ctx, key, lines...).Err(); err != nil {
				b.Fatal(err)
			}
		}
	}
	clients := []struct {
		name       string
		lpop, eval func(key string) error
	}{
		{"goredis-pool",
			func(key string) error { return pooled.LPop(ctx, key).Err() },
			func(key string) error { return pop.Run(ctx, pooled, []string{key}).Err() }},
		{"goredis-autopipeline",
			func(key string) error { return autopipelined.LPop(ctx, key).Err() },
			func(key string) error { return pop.Run(ctx, autopipelined, []string{key}).Err() }},
		{"rueidis",
			func(key string) error { return rue.Do(ctx, rue.B().Lpop().Key(key).Build()).Error() },
			func(key string) error { return rueScript.Exec(ctx, rue, []string{key}, nil).Error() }},
	}
	for i := range clients {
		fill(fmt.Sprint("lpop-", i))
		fill(fmt.Sprint("eval-", i))
	}
	b.ResetTimer()
	rates := map[string]float64{}
	for range rounds {
		for i, c := range clients {
			rates[c.name+"-lpop"] += testutil.PerSecond(b, benchClients, n, func() error { return c.lpop(fmt.Sprint("lpop-", i)) })
			rates[c.name+"-evalsha"] += testutil.PerSecond(b, benchClients, n, func() error { return c.eval(fmt.Sprint("eval-", i)) })
		}
	}
	b.StopTimer()
	for _, c := range clients {
		for _, op := range []string{"lpop", "evalsha"} {
			rate := rates[c.name+"-"+op] / rounds
			b.ReportMetric(rate, c.name+"-"+op+"-calls/s")
			b.ReportMetric(rate/(rates["goredis-autopipeline-"+op]/rounds), c.name+"-"+op+"-x-goredis-autopipeline")
		}
	}
}
