package redis

import (
	"sync"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// recentBindings remembers the last request ids this server bound in Redis, with their
// fingerprints, for a window from when it saw them or until maxBindings later ids push them out.
// The binding in Redis is what every server agrees on; this is only a server's memory of what it
// saw there, which may outlive that binding by the time between its setting and this server's
// look: an id reused with another request just after its window ends is then refused a little
// longer, and the same request, sent again, runs as it would have anyway.
type recentBindings struct {
	mu    sync.Mutex
	ids   map[string]binding
	order []string // ring of ids, oldest at next
	next  int
}

type binding struct {
	fingerprint string
	forget      time.Time
}

// maxBindings bounds what a server remembers: about 0.7 MB of ids and fingerprints.
const maxBindings = 4096

// holds reports whether r's id was bound here to r's fingerprint within r's window.
func (b *recentBindings) holds(r store.Request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.ids[r.ID]
	return ok && e.fingerprint == string(r.Fingerprint) && time.Now().Before(e.forget)
}

// add remembers r's binding, seen now in Redis.
func (b *recentBindings) add(r store.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.ids, b.order = make(map[string]binding, maxBindings), make([]string, 0, maxBindings)
	}
	if _, ok := b.ids[r.ID]; !ok {
		if len(b.order) < maxBindings {
			b.order = append(b.order, r.ID)
		} else {
			delete(b.ids, b.order[b.next])
			b.order[b.next] = r.ID
			b.next = (b.next + 1) % maxBindings
		}
	}
	b.ids[r.ID] = binding{fingerprint: string(r.Fingerprint), forget: time.Now().Add(r.Window)}
}
