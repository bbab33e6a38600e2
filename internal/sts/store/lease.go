package store

import (
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Leases. A read with a lease (ReadLeased, FindLeased) takes its lines out of the list as a
// consuming read does, but holds them under a lease until it is acknowledged (Ack: the lines are
// gone for good), released (Release: they go back at once) or expires (they go back to the front
// of the list by themselves, waking waiting reads). It is SQS's visibility timeout, JetStream's
// ack wait: a client that dies after a read loses no line, and no line is ever held by two
// clients at once.
//
// Each time a lease ends without an acknowledgement, the returns of its lines are counted, per
// line value; with LeaseSpec.MaxDeliveries, a line returned that many times goes to the list's
// dead-letter list (DeadLetterList) instead of back to the list, so that a line every client fails
// on cannot loop forever. Equal lines of one list share their count, as a UNIQUE add treats them
// as one.
//
// Leased lines still count towards the limits of their list and of the store, so that giving them
// back can never be refused.

// LeaseSpec is what a read with a lease asks for.
type LeaseSpec struct {
	// TTL is how long the lease runs before its lines go back; positive.
	TTL time.Duration
	// MaxDeliveries, when positive, sends a line to DeadLetterList instead of back to the list
	// once it has gone back that many times.
	MaxDeliveries int
}

// Lease is lines taken under a lease.
type Lease struct {
	ID      string
	List    string
	Lines   []string
	Expires time.Time
}

// LeaseRef names what Ack, Release and Extend act on: a lease by ID, or, when ID is empty, the
// lease of List that holds Line and expires first, of which they act on that line only (Ack,
// Release) or on the whole lease (Extend). With an ID, List is only a hint: a lease id is unique
// in its store, which finds the lease by its id alone; a backend may look in List first (Redis:
// one round trip less), and then looks by the id alone when the lease is not there, so a wrong or
// empty List changes no answer.
type LeaseRef struct {
	List string
	ID   string
	Line string
}

func (r LeaseRef) String() string {
	if r.ID != "" {
		return "lease " + r.ID
	}
	return fmt.Sprintf("the lease of %q holding %q", r.List, r.Line)
}

// Ways a lease ends without an acknowledgement, in a LeaseEndedError.
const (
	LeaseExpired  = "expired"
	LeaseReleased = "released"
)

var (
	// ErrLeaseNotFound means no lease has this id (never given, acknowledged, or ended too long
	// ago to be remembered), or no lease of the list holds this line.
	ErrLeaseNotFound = errors.New("store: no such lease")
	// ErrBadLease is a LeaseSpec or a LeaseRef that does not say what to do.
	ErrBadLease = errors.New("store: invalid lease")
)

// LeaseEndedError is an Ack or Extend of a lease that has already ended without acknowledgement:
// its lines went back (or to the dead letters) and may be held by another client now.
type LeaseEndedError struct {
	ID  string
	How string // LeaseExpired or LeaseReleased
}

func (e *LeaseEndedError) Error() string {
	return fmt.Sprintf("store: lease %s %s, its lines went back to the list", e.ID, e.How)
}

// LeaseMemory is how long a store remembers how a lease ended without acknowledgement, so that a
// late Ack is told "expired" (a conflict) rather than "unknown".
const LeaseMemory = 10 * time.Minute

// DeadLetterList is the list to which lines of name go once they have gone back
// LeaseSpec.MaxDeliveries times. It counts against Limits.MaxLists, and a store creates it with
// the first lease that may send lines there, refusing that lease when there is no room for it.
func DeadLetterList(name string) string { return name + deadSuffix }

const deadSuffix = ".dead"

// IsDeadLetterList reports whether name is a dead-letter list, whose leases never dead-letter:
// a line that every consumer of the dead letters fails on goes back to them, not to a
// dead-letter list of its own.
func IsDeadLetterList(name string) bool { return strings.HasSuffix(name, deadSuffix) }

// leaseIDs encodes lease ids: lower case, no padding, nothing a URL or a header would escape.
var leaseIDs = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewLeaseID returns a fresh random lease id: 26 characters, 128 bits. math/rand/v2's global
// source is the runtime's ChaCha8, unpredictable and several times cheaper than crypto/rand for
// an id taken on every leased read.
func NewLeaseID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return leaseIDs.EncodeToString(b[:])
}

// Check refuses a LeaseSpec without a positive TTL or with negative MaxDeliveries.
func (s LeaseSpec) Check() error {
	if s.TTL <= 0 || s.MaxDeliveries < 0 {
		return fmt.Errorf("%w: ttl %v, max deliveries %d", ErrBadLease, s.TTL, s.MaxDeliveries)
	}
	return nil
}
