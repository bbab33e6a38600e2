package store

import (
	"bytes"
	"context"
	"time"
)

// Requests a client may send again. A client that sends a change with an id of its own
// (REQUEST_ID) and gets no answer (a timeout, a connection cut, a server or a backend that died)
// cannot tell whether the change was made; it sends it again with the same id. For that retry
// to be safe, a backend records the outcome of a change made under a Request in the same atomic
// step as the change itself, beside the list it changed (Redis: in the list's slot, by the same
// script; memory: in the list's change record), and remembers it for the Request's Window. A
// change that finds its Request's outcome recorded does nothing and returns that outcome: the
// lines the first one took, the lease it gave, the error nil. So a retry, whenever it comes and
// whichever server it reaches, either finds the one outcome or, when the first never ran, runs
// once. There is nothing to claim, so no state outlives a server that dies.
//
// Only changes that are made are recorded: a change that fails and changes nothing (an empty
// list, a duplicate, a limit) records nothing, and a retry runs it again against the list as it
// is then, as Kafka's idempotent producer and SQS's deduplication do. A backend takes the Request
// from the context of the method a client called (WithRequest), and never hands it to the
// changes it makes of its own accord (expiries, dead letters), which are no client's.
//
// The methods that honour a Request are the changes a client asks for: Read, Find, ReadLeased,
// FindLeased, Ack, Release, Extend, Add, Insert, Replace, Reload and Reset.

// Request names one change of one client.
type Request struct {
	// ID is the client's id for the change: 1 to 128 bytes.
	ID string
	// Fingerprint says what the change asked for (command and parameters): the same id with
	// another fingerprint is another request, refused with ErrRequestReused.
	Fingerprint []byte
	// Window is how long the outcome is remembered; positive.
	Window time.Duration
}

// ForList is r for its change of list name, when the request changes several lists (RELOAD):
// each list's outcome is recorded apart, so that one list's does not answer for another's.
func (r Request) ForList(name string) Request {
	r.ID += "\x00" + name
	return r
}

// Same reports whether fingerprint is the request's.
func (r Request) Same(fingerprint []byte) bool { return bytes.Equal(r.Fingerprint, fingerprint) }

type requestKey struct{}

// WithRequest returns ctx carrying r, so that the change a Store method makes with it is made at
// most once.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the Request ctx carries, if any.
func RequestFrom(ctx context.Context) (Request, bool) {
	r, ok := ctx.Value(requestKey{}).(Request)
	return r, ok
}
