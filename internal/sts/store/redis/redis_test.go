package redis

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/storetest"
)

// prefixes numbers the key prefixes of the stores made on one Redis, so that each test's lists
// start empty without a Redis of its own.
var prefixes atomic.Int64

// open returns a store on conn under prefix, up, and closed when the test ends.
func open(t testing.TB, conn Connection, prefix string, limits store.Limits) *Store {
	t.Helper()
	client, err := conn.Client()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Client: client, KeyPrefix: prefix, Limits: limits, HealthInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !s.Up() {
		if time.Now().After(deadline) {
			t.Fatal("Redis never answered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

func newPrefix() string { return fmt.Sprintf("t%d:", prefixes.Add(1)) }

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, func(t testing.TB, limits store.Limits) store.Store {
		return open(t, Connection{URL: srv.URL()}, newPrefix(), limits)
	})
}

// TestConformanceShared gives the shared tests two stores on one Redis under one prefix: two
// table servers sharing the lists.
func TestConformanceShared(t *testing.T) {
	srv := redistest.Start(t)
	storetest.RunShared(t, func(t testing.TB, limits store.Limits) (store.Store, store.Store) {
		prefix := newPrefix()
		return open(t, Connection{URL: srv.URL()}, prefix, limits), open(t, Connection{URL: srv.URL()}, prefix, limits)
	})
}

// TestConformanceCluster runs the suite on a Redis Cluster of three masters: each list's keys
// share a hash tag, so every script runs on the list's shard, and the lists of a test spread
// over the shards.
func TestConformanceCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	conn := Connection{URL: "redis://" + cluster.Nodes[0].Addr, Cluster: true}
	storetest.Run(t, func(t testing.TB, limits store.Limits) store.Store {
		return open(t, conn, newPrefix(), limits)
	})
	storetest.RunShared(t, func(t testing.TB, limits store.Limits) (store.Store, store.Store) {
		prefix := newPrefix()
		return open(t, conn, prefix, limits), open(t, conn, prefix, limits)
	})
	for _, node := range cluster.Nodes {
		if n, err := node.Do("DBSIZE"); err != nil || n == int64(0) {
			t.Errorf("node %s holds %v keys (%v): the lists did not spread over the shards", node.Addr, n, err)
		}
	}
}
