package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Position says where in a list an operation reads or adds a line.
type Position int

const (
	// First is the front of the list (index 0).
	First Position = iota
	// Last is the end of the list.
	Last
	// Random is a uniformly chosen line; only reads accept it.
	Random
)

var (
	// ErrNotLoaded means no list has this name.
	ErrNotLoaded = errors.New("store: list not loaded")
	// ErrEmpty means the list exists but holds no line.
	ErrEmpty = errors.New("store: list is empty")
	// ErrDuplicate means a unique Add found an equal line already in the list.
	ErrDuplicate = errors.New("store: line already in the list")
	// ErrNoMatch means Find scanned the whole list without a hit.
	ErrNoMatch = errors.New("store: no line matches")
	// ErrNotRecorded means the change was made but could not be made durable (the journal failed
	// or is closed, or too few Redis replicas acknowledged it): it is not acknowledged, and a
	// restart or a failover may or may not show it. The error wraps the backend's.
	ErrNotRecorded = errors.New("store: the change could not be recorded")
	// ErrFull means the backend refused the change for want of memory (Redis at maxmemory):
	// nothing was changed.
	ErrFull = errors.New("store: the backend is full")
	// ErrUnavailable means the backend cannot be reached (Redis down, or failing over): nothing
	// was changed that the caller could count on. The error wraps the backend's.
	ErrUnavailable = errors.New("store: the backend is unavailable")
	// ErrOutcomeUnknown means a change was sent to the backend and no answer came back (a
	// timeout, a connection cut, a backend that died): it may or may not have been made. Only a
	// retry with the same Request can tell (it finds the recorded outcome, or makes the change
	// once). The error wraps the backend's.
	ErrOutcomeUnknown = errors.New("store: the change was sent and its outcome is unknown")
	// ErrRequestReused means a Request's ID was used before with another fingerprint.
	ErrRequestReused = errors.New("store: the request id was used for another request")
	// ErrBadPage means Page was given a negative offset or count.
	ErrBadPage = errors.New("store: a page needs an offset and a count of 0 or more")
)

// CheckPage refuses the arguments of a Page that no list could answer, before a backend is asked.
func CheckPage(offset, n int) error {
	if offset < 0 || n < 0 {
		return ErrBadPage
	}
	return nil
}

// ShortListError is returned by Read when it is asked for more lines than the list holds.
type ShortListError struct {
	Want int // lines asked for
	Have int // lines in the list
}

func (e *ShortListError) Error() string {
	return fmt.Sprintf("store: %d lines asked for, the list has %d", e.Want, e.Have)
}

// CanWait reports whether a read that failed with err may wait for lines (Read and Find with a
// positive wait): the list is missing, empty, too short or holds no match yet.
func CanWait(err error) bool {
	var short *ShortListError
	return errors.Is(err, ErrNotLoaded) || errors.Is(err, ErrEmpty) || errors.Is(err, ErrNoMatch) || errors.As(err, &short)
}

// ListInfo describes one list, as Lists reports it.
type ListInfo struct {
	Name   string
	Length int
	// Digest is the SHA-256 (hex) of the content the list was last replaced with by Replace or
	// LoadOnce with a digest; "" when its last replacement had none, or it was never replaced.
	Digest string
	// Leased is the number of lines held under leases, not counted in Length.
	Leased int
	// Returned and DeadLettered count the lines of leases that ended without acknowledgement,
	// those that went back to the list and those that went to its dead letters, since the list
	// was created (the memory backend without a journal: since the process started).
	Returned, DeadLettered int64
}

// Matcher is FIND's test of a line. An error stops the scan and is returned as it is.
type Matcher func(line string) (bool, error)

// Store holds named lists of lines. Every method is safe for concurrent use, and each operation
// is atomic with respect to the list it touches, across every process that shares the backend.
// A change whose context carries a Request (WithRequest) is made at most once (request.go).
// A change returns only once it is durable in the backend's own sense (the journal, replica
// acknowledgements); otherwise ErrNotRecorded. A backend that cannot be reached answers
// ErrUnavailable. A wait ends when ctx does; a command already sent to a remote backend is
// waited for (bounded by the backend's own timeouts), since its answer says whether a line was
// consumed.
type Store interface {
	// Length reports how many lines the list holds; ErrNotLoaded if there is no such list.
	Length(ctx context.Context, name string) (int, error)

	// Read picks n lines one after the other, each against the list as the previous picks left it
	// (First = index 0, Last = the last index, Random = uniform), and removes them. With keep, the
	// picked lines are then appended to the end in pick order, so First+keep rotates the list and
	// Last+keep returns the same line forever.
	// Errors, in this order: ErrNotLoaded, ErrEmpty, *ShortListError.
	//
	// With a positive wait, a read that would fail with one of these errors waits up to wait for
	// the lines to arrive instead, woken by a change made through any server sharing the
	// backend; it returns the error it meets when the wait ends, or ctx's error if ctx ends
	// first.
	Read(ctx context.Context, name string, pos Position, n int, keep bool, wait time.Duration) ([]string, error)

	// Find scans the list front to back, removes the first line that match accepts and returns it;
	// with keep the line is appended to the end. An error from match stops the scan and is
	// returned with the list unchanged. Other errors: ErrNotLoaded, ErrEmpty, ErrNoMatch, after
	// which a positive wait waits for a matching line as Read does.
	Find(ctx context.Context, name string, match Matcher, keep bool, wait time.Duration) (string, error)

	// ReadLeased is Read without keep, whose lines are held under a lease (lease.go) instead of
	// consumed. It fails as Read does, and with ErrBadLease for a spec that LeaseSpec.Check refuses.
	ReadLeased(ctx context.Context, name string, pos Position, n int, spec LeaseSpec, wait time.Duration) (Lease, error)

	// FindLeased is Find without keep, whose line is held under a lease.
	FindLeased(ctx context.Context, name string, match Matcher, spec LeaseSpec, wait time.Duration) (Lease, error)

	// Ack ends a lease for good, or one line of it (LeaseRef): its lines are consumed. It fails
	// with ErrLeaseNotFound, or a *LeaseEndedError for a lease that ended meanwhile, and then
	// removes nothing from the list.
	Ack(ctx context.Context, ref LeaseRef) error

	// Release ends a lease, or one line of it, and gives its lines back at once, at the front
	// (First) or the end (Last) of the list, counting a return as an expiry does. Releasing a lease
	// that was released or expired already succeeds; other failures are Ack's.
	Release(ctx context.Context, ref LeaseRef, pos Position) error

	// Extend makes a running lease expire ttl from now and returns when; failures are Ack's.
	Extend(ctx context.Context, ref LeaseRef, ttl time.Duration) (time.Time, error)

	// BindRequest ties r.ID to r.Fingerprint for r.Window, so that the id sent again with another
	// request, on any list, is refused with ErrRequestReused; the same request is let through,
	// to find its recorded outcome (request.go).
	BindRequest(ctx context.Context, r Request) error

	// Add inserts line at the front (First) or the end (Last), creating the list if it is new,
	// even when the Add then fails. With unique, a line equal to one already in the list is
	// refused with ErrDuplicate. A line over a limit is refused with a *LimitError.
	Add(ctx context.Context, name, line string, pos Position, unique bool) error

	// Insert adds lines at the front (First) or the end (Last) in one atomic step, keeping their
	// order, creating the list if it is new. It fails with a *LimitError, and then changes
	// nothing, when one line or the result would exceed a limit.
	Insert(ctx context.Context, name string, lines []string, pos Position) error

	// Ensure creates an empty list if there is none with this name.
	Ensure(ctx context.Context, name string) error

	// Replace creates the list or replaces its content with lines, and records digest (the
	// SHA-256 of the content they came from, "" for none) as the list's Digest. The store may keep
	// the slice: the caller hands over ownership. Over a limit it fails with a *LimitError and
	// changes nothing.
	Replace(ctx context.Context, name string, lines []string, digest string) error

	// Reload is Replace that also ends every lease of the list, in the same atomic step, without
	// giving its lines back, as if each were acknowledged, and returns how many lines they held:
	// a reset that brings the list back to its source's content (RELOAD) must not have lines read
	// before it come back after it, nor a lease taken while the content was on its way survive
	// it. The leases' ids are then unknown (ErrLeaseNotFound).
	Reload(ctx context.Context, name string, lines []string, digest string) (ended int, err error)

	// LoadOnce is a startup load of a dataset whose content has the given digest: it creates the
	// list with lines, as Replace would, only if the list does not exist, and reports whether it
	// did, with the digest the list holds. Of servers sharing a backend and starting together,
	// whatever their contents, the first creates the list and the others keep it: they must not
	// replace lines that clients may have consumed since. The table server's startup calls it
	// for a list the store did not hold when it looked (sts.Server.LoadAtStartup).
	LoadOnce(ctx context.Context, name string, lines []string, digest string) (loaded bool, held string, err error)

	// Lines returns a copy of the list's lines in order; ErrNotLoaded if there is no such list.
	Lines(ctx context.Context, name string) ([]string, error)

	// Page returns up to n lines from position offset on (0 is the front) and the list's length,
	// read together, changing nothing: the web page shows a list a page at a time without
	// consuming a line nor copying the whole list. An offset at or past the end gives no lines.
	// ErrNotLoaded if there is no such list; a negative offset or n is refused (ErrBadPage).
	Page(ctx context.Context, name string, offset, n int) (lines []string, length int, err error)

	// Reset empties the list and reports whether it existed. It never creates a list.
	Reset(ctx context.Context, name string) (bool, error)

	// Lists reports every list, empty ones included, sorted by name in byte order.
	Lists(ctx context.Context) ([]ListInfo, error)

	// Waiting is the number of reads of this process waiting for lines.
	Waiting() int

	// EndWaits ends every wait: waiting reads answer as if their wait were over, and later
	// reads do not wait. A server calls it when it begins to stop.
	EndWaits()

	// Close releases what the store holds (connections); call it once the server has stopped.
	Close() error
}

// Sizer is a store that knows the size of its lines cheaply (the memory store); metrics show it
// when the store has it.
type Sizer interface {
	// Bytes is the memory the lists hold as Limits.MaxTotalBytes counts it: the lines' text and
	// bookkeeping, the lists, leases and REQUEST_ID outcomes.
	Bytes() int64
}

// Health is a store whose backend can be out of reach (Redis): /readyz and metrics follow Up. A
// store without it is always up.
type Health interface {
	// Name is the backend's name in metrics: "redis".
	Name() string
	// Up reports whether the backend answered its last health check.
	Up() bool
}
