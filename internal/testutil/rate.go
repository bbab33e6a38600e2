package testutil

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// PerSecond runs op n times over workers goroutines and returns how many ran per second, as a
// benchmark's figure; an error fails t.
func PerSecond(t testing.TB, workers, n int, op func() error) float64 {
	t.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := op(); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}
