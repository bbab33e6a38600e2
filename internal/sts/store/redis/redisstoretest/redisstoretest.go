// Package redisstoretest opens the Redis store on a test's redis-server as a table server does:
// the one way the tests of the protocol, its benchmarks and the web page build a shared backend.
package redisstoretest

import (
	"testing"
	"time"

	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// Open returns a store on the Redis at url with o's options (its KeyPrefix "sts:" when empty),
// once it answers, as cmd/sts waits before it loads; the store is closed when t ends.
func Open(t testing.TB, url string, o redisstore.Options) *redisstore.Store {
	t.Helper()
	client, err := redisstore.Connection{URL: url}.Client()
	if err != nil {
		t.Fatal(err)
	}
	o.Client = client
	if o.KeyPrefix == "" {
		o.KeyPrefix = "sts:"
	}
	st, err := redisstore.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	testutil.Until(t, 10*time.Second, 5*time.Millisecond, "Redis to answer", st.Up)
	return st
}
