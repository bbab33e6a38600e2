package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Reads of one list from one position go to Redis together: while a script of such reads is
// on its way, the reads that arrive queue, and go in the next script (scriptReadBatch), which
// answers each as if it ran alone, in the order they arrived. A script costs Redis some twenty
// LPOPs, whatever it takes (its call, its type checks, its bookkeeping, BenchmarkStoreVsRedisBenchmark):
// under load, one script for many reads is what lets a shared Redis serve them, and a Redis
// serving others waits less. A read that finds none on its way goes at once, alone: batching
// adds no wait, like a journal's group commit. A batch takes at most batchLines lines, so that
// its work stays bounded.
//
// Under MinReplicas each read is a batch of one, sent alone: a WAIT acknowledges a script as a
// whole, where each read's own failure (an empty list) must stay its own answer.
const batchLines = chunkLines

// batchKey is what the reads of a batch have in common: the list, the position (an end, or
// RANDOM), and whether the lines are kept.
type batchKey struct {
	name string
	pos  store.Position
	keep bool
}

// batchedRead is one read in a batch, and its answer.
type batchedRead struct {
	ctx   context.Context
	n     int
	r     *store.Request
	lines []string
	err   error
	ready chan struct{}  // signalled once answered, or once this read leads batch (its buffer of 1 holds the signal)
	batch []*batchedRead // the batch this read sends, itself first, when it leads (readBatches.mu); its array is kept for the next use
	sent  bool           // taken into a batch: it is answered, whatever its context (readBatches.mu)
}

// readBatches are the reads of each end queued behind its batch on its way. An end is in queued
// while a batch of it is on its way.
type readBatches struct {
	mu     sync.Mutex
	queued map[batchKey][]*batchedRead
}

// idleReads recycles batchedReads, their channels and their batches' arrays, which every READ
// on Redis would allocate.
var idleReads = sync.Pool{New: func() any { return &batchedRead{ready: make(chan struct{}, 1)} }}

// readBatched reads n lines of list k at end e under request r, in a batch of e.
func (s *Store) readBatched(ctx context.Context, k keys, e batchKey, n int, r *store.Request) ([]string, error) {
	me := idleReads.Get().(*batchedRead)
	me.ctx, me.n, me.r = ctx, n, r
	s.readIn(me, k, e)
	lines, err := me.lines, me.err
	// Nothing holds me now: the reads it led are answered, the one it followed answered it, and
	// a read that left the queue was taken out of it.
	clear(me.batch)
	*me = batchedRead{ready: me.ready, batch: me.batch[:0]}
	idleReads.Put(me)
	return lines, err
}

// readIn answers me in a batch of e: it joins or leads one, and a leader sends its batch, then
// hands e over to the next batch and wakes the reads it answered.
func (s *Store) readIn(me *batchedRead, k keys, e batchKey) {
	if !s.batches.join(e, me) {
		if !s.batches.await(e, me) {
			me.err = me.ctx.Err()
			return
		}
		if len(me.batch) == 0 {
			return
		}
		s.batches.fill(e, me)
	}
	// The reads whose clients are gone move last and are not sent, so that no line is taken for
	// nobody; the others keep their order.
	sending := 0
	for i, m := range me.batch {
		if m.err = m.ctx.Err(); m.err == nil {
			me.batch[i], me.batch[sending] = me.batch[sending], m
			sending++
		}
	}
	if sending > 0 {
		bctx, cancel := batchContext(me.batch[0].ctx)
		s.sendBatch(bctx, k, e, me.batch[:sending])
		cancel()
	}
	if next := s.batches.handOff(e); next != nil {
		next.ready <- struct{}{}
	}
	for _, m := range me.batch {
		if m != me {
			m.ready <- struct{}{}
		}
	}
}

// batchContext is the context a batch is sent with, from its first read's: its deadline, which
// the others' are close to, but not its cancellation (a client gone), which is not theirs.
func batchContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	ctx = context.WithoutCancel(ctx)
	if !ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, d)
}

// join queues m at end e and reports whether it leads a batch (of itself) at once: when none of
// e is on its way.
func (b *readBatches) join(e batchKey, m *batchedRead) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queued == nil {
		b.queued = make(map[batchKey][]*batchedRead)
	}
	q, onItsWay := b.queued[e]
	if onItsWay {
		b.queued[e] = append(q, m)
		return false
	}
	b.queued[e] = nil
	m.lead()
	return true
}

// await waits until m is answered or leads, and reports whether it stays: a read whose context
// ends before a batch takes it leaves the queue, so that no line is taken for nobody.
func (b *readBatches) await(e batchKey, m *batchedRead) bool {
	select {
	case <-m.ready:
		return true
	case <-m.ctx.Done():
	}
	b.mu.Lock()
	gone := !m.sent
	if gone {
		b.queued[e] = slices.DeleteFunc(b.queued[e], func(queued *batchedRead) bool { return queued == m })
	}
	b.mu.Unlock()
	if !gone {
		<-m.ready
	}
	return !gone
}

// handOff ends e's batch on its way: the first read queued meanwhile leads the next batch,
// which it fills when it runs (fill); it returns that read, or nil when none is queued. The
// reads that queue while the woken leader waits for a core go in its batch too: on a busy
// server that wait is as long as the batch's round trip, and a batch filled when it is chosen
// carried half the READs, so twice the round trips, each a write and a read for this server and
// for Redis (BenchmarkRedisReadFirstVsLPOPHandler: sts-reads/script).
func (b *readBatches) handOff(e batchKey) *batchedRead {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queued[e]
	if len(q) == 0 {
		delete(b.queued, e)
		return nil
	}
	q[0].lead()
	b.queued[e] = q[1:]
	return q[0]
}

// lead makes m the first read of the batch it sends (readBatches.mu).
func (m *batchedRead) lead() { m.sent, m.batch = true, append(m.batch, m) }

// fill takes into leader's batch, which holds itself, the reads queued at e, up to batchLines
// lines.
func (b *readBatches) fill(e batchKey, leader *batchedRead) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queued[e]
	lines, i := leader.n, 0
	for ; i < len(q) && lines+q[i].n <= batchLines; i++ {
		q[i].sent = true
		lines += q[i].n
	}
	leader.batch = append(leader.batch, q[:i]...)
	b.queued[e] = q[i:]
}

// sendBatch runs scriptReadBatch for batch and gives each read its answer.
func (s *Store) sendBatch(ctx context.Context, k keys, e batchKey, batch []*batchedRead) {
	replies, err := s.evalStrings(ctx, readBatchScript, true, s.batchArgs(k, e, batch))
	if err == nil {
		err = s.answer(batch, replies)
	}
	if err != nil {
		for _, m := range batch {
			m.lines, m.err = nil, err
		}
	}
}

// batchArgs returns the command that runs scriptReadBatch for batch, its first two places (the
// command's name and the script) left for eval.
func (s *Store) batchArgs(k keys, e batchKey, batch []*batchedRead) []any {
	outcomes := 0
	for _, m := range batch {
		if m.r != nil {
			outcomes++
		}
	}
	// One array: the keys (the list's, twice, then each request's outcome key), then the
	// arguments, each read's among them.
	argv := make([]any, 5+outcomes, 5+outcomes+5+4*len(batch))
	argv[2], argv[3], argv[4] = 2+outcomes, k.boxed, k.boxed
	argv = append(argv, "", "", s.tombArg, positions[e.pos], flag(e.keep))
	key := 5
	for _, m := range batch {
		if m.r == nil {
			argv = append(argv, m.n, "")
		} else {
			outcome, window, fingerprint := s.outcomeArgs(k, m.r)
			argv[key], key = outcome, key+1
			argv = append(argv, m.n, window, fingerprint)
		}
		argv = appendFractions(argv, e.pos, m.n)
	}
	return argv
}

// answer gives each read of batch its answer from the batch script's flat reply: status 0, a
// count and the lines; 1 or 2; 3 and the list's length; 4 and an error's text. Each read's lines
// are a slice of the reply, capped at their end.
func (s *Store) answer(batch []*batchedRead, reply []string) error {
	most := 0
	for _, m := range batch {
		most += m.n
	}
	at, lines := 0, 0
	next := func() (string, bool) {
		if at == len(reply) {
			return "", false
		}
		at++
		return reply[at-1], true
	}
	for _, m := range batch {
		v, ok := next()
		if !ok {
			return fmt.Errorf("redis: a batch of %d reads had %d answers", len(batch), len(reply))
		}
		st, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("redis: a read's answer begins with %q", v)
		}
		switch st {
		case 0:
			count, _ := next()
			n, err := strconv.Atoi(count)
			if err != nil || n < 0 || n > len(reply)-at || lines+n > most {
				return fmt.Errorf("redis: a read's answer of %q lines in a reply of %d", count, len(reply))
			}
			m.lines, at, lines = reply[at:at+n:at+n], at+n, lines+n
		case 3:
			have, _ := next()
			n, _ := strconv.ParseInt(have, 10, 64)
			m.err = readFailure(st, n, m.n)
		case 4:
			text, _ := next()
			m.err = s.failure(scriptError(text))
		default:
			m.err = readFailure(st, nil, m.n)
		}
	}
	if at != len(reply) {
		return fmt.Errorf("redis: a batch of %d reads left %d values of its reply unread", len(batch), len(reply)-at)
	}
	return nil
}

// scriptError is an error a script replied as text (scriptReadBatch's status 4): Redis' own, as
// go-redis reads one.
type scriptError string

func (e scriptError) Error() string { return string(e) }

// RedisError makes scriptError a goredis.Error.
func (scriptError) RedisError() {}
