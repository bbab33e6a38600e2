package memory

import (
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/storetest"
)

func newStore(t testing.TB, limits store.Limits) store.Store {
	m := New(WithLimits(limits))
	t.Cleanup(func() { m.Close() })
	return m
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore)
}

// TestConformanceShared gives the shared tests one Memory twice: the lists of one process are
// shared by everything in it, which is what those tests ask of a backend.
func TestConformanceShared(t *testing.T) {
	storetest.RunShared(t, func(t testing.TB, limits store.Limits) (store.Store, store.Store) {
		s := newStore(t, limits)
		return s, s
	})
}
