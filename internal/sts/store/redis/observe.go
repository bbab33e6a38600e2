package redis

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// observer is a go-redis hook that reports request durations and dials to the metrics, once
// Observe has named them: the server's metrics are made after its store.
type observer struct {
	observe atomic.Pointer[func(d time.Duration, failed bool)]
	dialed  atomic.Pointer[func(failed bool)]
}

// Observe reports the duration of every request to Redis to request, and every connection
// opened to dial.
func (s *Store) Observe(request func(d time.Duration, failed bool), dial func(failed bool)) {
	s.observer.observe.Store(&request)
	s.observer.dialed.Store(&dial)
}

func (o *observer) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if dialed := o.dialed.Load(); dialed != nil {
			(*dialed)(err != nil)
		}
		return conn, err
	}
}

func (o *observer) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		o.report(start, err)
		return err
	}
}

func (o *observer) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		o.report(start, err)
		return err
	}
}

// report counts a request; a reply that is Redis' own error (NOSCRIPT, a missing key) is an
// answer, not a failure of the backend.
func (o *observer) report(start time.Time, err error) {
	observe := o.observe.Load()
	if observe == nil {
		return
	}
	failed := err != nil && !errors.Is(err, goredis.Nil) && !isReply(err)
	(*observe)(time.Since(start), failed)
}
