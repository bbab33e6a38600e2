package redis

import (
	"context"
	"fmt"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// BenchmarkReadFirstAllocs is one READ FIRST KEEP=FALSE of a line through the store, from one
// goroutine, with its allocations (b.ReportAllocs): what the Redis backend adds to a READ, which
// the table server's benchmarks count with their HTTP (BenchmarkRedisReadFirstVsLPOPHandler).
func BenchmarkReadFirstAllocs(b *testing.B) {
	_, s := benchStore(b)
	ctx := context.Background()
	lines := make([]string, b.N+chunkLines)
	for i := range lines {
		lines[i] = fmt.Sprintf("%020d", i)
	}
	if err := s.Replace(ctx, "l", lines, ""); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if got, err := s.Read(ctx, "l", store.First, 1, false, 0); err != nil || len(got) != 1 {
			b.Fatalf("read %q: %v", got, err)
		}
	}
}
