package redis

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/storetest"
	"github.com/sts-operator/sts-operator/internal/testutil"
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
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "Redis to answer", s.Up)
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
	// Names that cannot be a hash tag by themselves still keep their keys together.
	s := open(t, conn, newPrefix(), store.Limits{})
	for _, name := range []string{"", "}x", "}", "{", "{}"} {
		if err := s.Add(t.Context(), name, "l", store.Last, false); err != nil {
			t.Errorf("Add to %q on Cluster: %v", name, err)
		}
	}
	for _, node := range cluster.Nodes {
		if n, err := node.Do("DBSIZE"); err != nil || n == int64(0) {
			t.Errorf("node %s holds %v keys (%v): the lists did not spread over the shards", node.Addr, n, err)
		}
	}
}

// A key of the wrong type where a list lives (someone SET a string) is an error that names the
// key, and nothing is written to it.
func TestWrongTypeIsRefusedAndLeftAlone(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	s := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	ctx := t.Context()
	if err := s.Add(ctx, "users", "u1", store.Last, false); err != nil {
		t.Fatal(err)
	}
	key := prefix + "{users}"
	if _, err := srv.Do("SET", key, "not a list"); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"Read":    func() error { _, err := s.Read(ctx, "users", store.First, 1, false, 0); return err },
		"Add":     func() error { return s.Add(ctx, "users", "u2", store.Last, true) },
		"Replace": func() error { return s.Replace(ctx, "users", []string{"x"}, "") },
		"Reset":   func() error { _, err := s.Reset(ctx, "users"); return err },
	} {
		err := call()
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "not a list") {
			t.Errorf("%s on a string key: %v, want an error naming %s", name, err, key)
		}
	}
	if v, err := srv.Do("GET", key); v != "not a list" || err != nil {
		t.Errorf("the string key now holds %v (%v)", v, err)
	}

	// A companion key of the wrong type stops the script before it takes a line.
	if err := s.Replace(ctx, "coupons", []string{"c1", "c2"}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("SET", prefix+"{coupons}:unique", "oops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "coupons", store.First, 2, false, 0); err == nil || !strings.Contains(err.Error(), "{coupons}:unique") {
		t.Errorf("Read with a string unique index: %v, want an error naming it", err)
	}
	if n, _ := srv.Do("LLEN", prefix+"{coupons}"); n != int64(2) {
		t.Errorf("the list holds %v lines after the refused read, want 2", n)
	}
}

// A Redis at maxmemory refuses what would grow it (store.ErrFull, nothing half done) and still
// lets clients consume, which frees memory for adds again.
func TestRedisAtMaxmemory(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "noeviction"))
	s := open(t, Connection{URL: srv.URL()}, newPrefix(), store.Limits{})
	ctx := t.Context()
	line := strings.Repeat("x", 1000)
	added := 0
	var err error
	for ; added < 100000; added++ {
		if err = s.Add(ctx, "big", fmt.Sprintf("%s-%d", line, added), store.Last, false); err != nil {
			break
		}
	}
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("after %d adds: %v, want store.ErrFull", added, err)
	}
	if n, err := s.Length(ctx, "big"); err != nil || n != added {
		t.Fatalf("Length = %d, %v; want the %d lines acknowledged", n, err, added)
	}
	if _, err := s.Read(ctx, "big", store.First, added/2, false, 0); err != nil {
		t.Fatalf("consuming at maxmemory: %v", err)
	}
	if err := s.Add(ctx, "big", "after", store.Last, false); err != nil {
		t.Errorf("an add once lines were consumed: %v", err)
	}
}

// With --redis-min-replicas and no replica, a change is not acknowledged (and says so), while an
// answer that changed nothing is the plain answer.
func TestMinReplicasWithoutReplica(t *testing.T) {
	srv := redistest.Start(t)
	client, err := Connection{URL: srv.URL(), WaitTimeout: 100 * time.Millisecond}.Client()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Client: client, KeyPrefix: newPrefix(), MinReplicas: 1, ReplicaTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	if _, err := s.Read(ctx, "missing", store.First, 1, false, 0); !errors.Is(err, store.ErrNotLoaded) {
		t.Errorf("Read of a missing list: %v, want store.ErrNotLoaded", err)
	}
	if err := s.Add(ctx, "l", "x", store.Last, false); !errors.Is(err, store.ErrNotRecorded) {
		t.Errorf("Add without a replica: %v, want store.ErrNotRecorded", err)
	}
	if err := s.Add(ctx, "l", "x", store.Last, true); !errors.Is(err, store.ErrDuplicate) {
		t.Errorf("a duplicate Add: %v, want store.ErrDuplicate", err)
	}
	// A list of two lines (no unique index), whose read of one line plainRead answers.
	for _, line := range []string{"x", "y"} {
		if err := s.Add(ctx, "m", line, store.Last, false); !errors.Is(err, store.ErrNotRecorded) {
			t.Errorf("Add without a replica: %v, want store.ErrNotRecorded", err)
		}
	}
	if got, err := s.Read(ctx, "m", store.First, 1, false, 0); !errors.Is(err, store.ErrNotRecorded) {
		t.Errorf("Read without a replica: %q, %v, want store.ErrNotRecorded", got, err)
	}
}

// An ACL user: the username and password of Connection replace the URL's, the right pair
// works (reads, writes, the notifications of waiting reads), and a wrong username is
// unavailable, logged as refused credentials, like a wrong password.
func TestACLUser(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("default-pw"), redistest.WithUser("sts-user", "user-pw"))
	open := func(username string) (*Store, *testutil.Buffer) {
		t.Helper()
		client, err := Connection{URL: srv.URL(), Username: username, Password: "user-pw"}.Client()
		if err != nil {
			t.Fatal(err)
		}
		log := &testutil.Buffer{}
		s, err := New(Options{Client: client, KeyPrefix: newPrefix(), HealthInterval: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, log
	}

	s, _ := open("sts-user")
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the store up as sts-user", s.Up)
	ctx := t.Context()
	if err := s.Add(ctx, "l", "a", store.Last, false); err != nil {
		t.Fatalf("Add as sts-user: %v", err)
	}
	if got, err := s.Read(ctx, "l", store.First, 1, false, 0); err != nil || len(got) != 1 || got[0] != "a" {
		t.Fatalf("Read as sts-user: %q, %v", got, err)
	}
	if who, err := srv.Do("CLIENT", "LIST"); err != nil || !strings.Contains(fmt.Sprint(who), "user=sts-user") {
		t.Errorf("CLIENT LIST shows no connection of sts-user: %v, %v", who, err)
	}

	wrong, log := open("nobody")
	if _, err := wrong.Length(ctx, "l"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Length with a wrong username: %v, want store.ErrUnavailable", err)
	}
	time.Sleep(100 * time.Millisecond)
	if wrong.Up() {
		t.Error("the store is up with a wrong username")
	}
	if !strings.Contains(log.String(), "Redis refused the credentials") {
		t.Errorf("the log does not say the credentials were refused:\n%s", log)
	}
}

// A wrong password keeps the store down (not ready) and its calls unavailable, and says why in
// the log; it does not crash.
func TestWrongPasswordIsUnavailable(t *testing.T) {
	srv := redistest.Start(t, redistest.WithPassword("right"))
	client, err := Connection{URL: srv.URL(), Password: "wrong"}.Client()
	if err != nil {
		t.Fatal(err)
	}
	log := &testutil.Buffer{}
	s, err := New(Options{Client: client, KeyPrefix: newPrefix(), HealthInterval: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Length(t.Context(), "l"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Length with a wrong password: %v, want store.ErrUnavailable", err)
	}
	time.Sleep(100 * time.Millisecond)
	if s.Up() {
		t.Error("the store is up with a wrong password")
	}
	if !strings.Contains(log.String(), "Redis refused the credentials") {
		t.Errorf("the log does not say the credentials were refused:\n%s", log)
	}
}
