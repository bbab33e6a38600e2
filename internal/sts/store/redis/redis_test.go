package redis

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// prefixes numbers the key prefixes of the stores a test makes on one server, so that each store
// starts empty.
var prefixes atomic.Int64

// newStore returns a store on srv under a fresh key prefix, closed when the test ends.
func newStore(t testing.TB, srv *redistest.Server, limits store.Limits) *Store {
	t.Helper()
	client, err := Connection{URL: srv.URL()}.Client()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Client: client, KeyPrefix: fmt.Sprintf("t%d:", prefixes.Add(1)), Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSmoke(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, store.Limits{})
	ctx := context.Background()
	if err := s.Replace(ctx, "l", []string{"a", "b", "c", "d"}, "x"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, "l", store.Random, 2, false, 0)
	t.Log(got, err)
	if err := s.Add(ctx, "l", "z", store.Last, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(ctx, "l", "z", store.Last, true); err != store.ErrDuplicate {
		t.Fatal(err)
	}
	f, err := s.Find(ctx, "l", func(l string) (bool, error) { return l == "z", nil }, true, 0)
	t.Log(f, err)
	lines, err := s.Lines(ctx, "l")
	t.Log(lines, err)
	lists, err := s.Lists(ctx)
	t.Log(lists, err)
	n, err := s.Length(ctx, "nope")
	t.Log(n, err)
	ok, err := s.LoadOnce(ctx, "l", []string{"q"}, "x")
	t.Log(ok, err)
}
