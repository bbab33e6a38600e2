package redis

import (
	"errors"
	"testing"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Two servers share --max-lists through the registry: once one has filled it, the other creates
// no list beyond the overshoot that the count it last saw allows (one list: its own creation
// reads the count afresh), and a server that believes the registry full looks again before it
// refuses, so a stale count never refuses a list there is room for.
func TestMaxListsAcrossServers(t *testing.T) {
	srv := redistest.Start(t)
	prefix := newPrefix()
	conn := Connection{URL: srv.URL()}
	a := open(t, conn, prefix, store.Limits{MaxLists: 3})
	b := open(t, conn, prefix, store.Limits{MaxLists: 3})
	ctx := t.Context()
	for _, name := range []string{"l1", "l2", "l3"} {
		if err := a.Add(ctx, name, "x", store.Last, false); err != nil {
			t.Fatal(err)
		}
	}
	created := 0
	for _, name := range []string{"m1", "m2", "m3"} {
		err := b.Ensure(ctx, name)
		var limit *store.LimitError
		switch {
		case err == nil:
			created++
		case !errors.As(err, &limit) || limit.Limit != store.LimitLists:
			t.Fatalf("Ensure(%s) on the second server: %v", name, err)
		}
	}
	if created > 1 {
		t.Errorf("the second server created %d lists beyond --max-lists=3, want at most 1", created)
	}
	t.Logf("lists created beyond the limit by a server whose count was stale: %d", created)

	// The registry loses names by hand (a cleanup of old lists): the next creation finds room
	// although the count the server last saw says full.
	if _, err := srv.Do("DEL", prefix+"lists"); err != nil {
		t.Fatal(err)
	}
	if err := a.Ensure(ctx, "after-cleanup"); err != nil {
		t.Errorf("a creation after the registry emptied: %v", err)
	}
}
