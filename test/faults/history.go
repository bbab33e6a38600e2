package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// Kind is what a logical operation asks the server to do.
type Kind string

// The operations clients run. Each is one logical operation with one REQUEST_ID, however many
// times it is sent.
const (
	Read      Kind = "READ"       // READ KEEP=FALSE (FIRST, LAST or RANDOM)
	LeaseRead Kind = "READ-LEASE" // READ LEASE=<ms>: the line is held until ACK, RELEASE or expiry
	Ack       Kind = "ACK"
	Release   Kind = "RELEASE"
	Find      Kind = "FIND" // FIND KEEP=FALSE
	Add       Kind = "ADD"
	Reload    Kind = "RELOAD"
	Load      Kind = "LOAD" // LOAD MODE=REPLACE, the lines a cycle starts with
)

// Attempt is one sending of an operation: to which server, when, and what came back.
type Attempt struct {
	Server int           `json:"server"`
	Start  time.Duration `json:"start"` // since the history began
	End    time.Duration `json:"end"`
	// Status is the HTTP status, 0 when no answer came (Err says why).
	Status int    `json:"status,omitempty"`
	Err    string `json:"err,omitempty"`
	// Answer is the decoded JSON answer; nil with a Status when the body was not one (Body then
	// holds its start).
	Answer *protocol.Answer `json:"answer,omitempty"`
	Body   string           `json:"body,omitempty"`
	// ExpiresAt is the answer's lease expiry on the history's clock.
	ExpiresAt time.Duration `json:"expiresAt,omitempty"`
}

// Definitive tells whether the attempt settles its operation. A connection error, a timeout, any
// 5xx and a 409 in_progress (the first request with the id still running, as the servers before
// issue 23 answered) ask for the same id to be sent again; anything else is the answer.
func (a *Attempt) Definitive() bool {
	if a.Err != "" || a.Status == 0 || a.Status >= 500 {
		return false
	}
	return a.Status != 409 || a.Answer == nil || a.Answer.Reason != "in_progress"
}

// OK tells whether the attempt was a successful answer.
func (a *Attempt) OK() bool { return a.Status == 200 && a.Answer != nil && a.Answer.OK }

// Value is the line a READ or FIND answered, "" when none.
func (a *Attempt) Value() (string, bool) {
	if !a.OK() || a.Answer.Value == nil {
		return "", false
	}
	return *a.Answer.Value, true
}

// Reason is the answer's reason, "" when there is none.
func (a *Attempt) Reason() string {
	if a.Answer == nil {
		return ""
	}
	return a.Answer.Reason
}

// Op is one logical operation: its request, every attempt, and its definitive answer.
type Op struct {
	ID     string `json:"id"` // the REQUEST_ID every attempt carries
	Client int    `json:"client"`
	Kind   Kind   `json:"kind"`
	List   string `json:"list"`
	// Command and Query are the request, the same at every attempt (the server binds the id to
	// them); Body is a LOAD's.
	Command string `json:"command"`
	Query   string `json:"query"`
	Body    string `json:"-"`
	Line    string `json:"line,omitempty"`   // ADD's line
	Unique  bool   `json:"unique,omitempty"` // ADD UNIQUE=TRUE
	Lease   string `json:"lease,omitempty"`  // ACK's and RELEASE's lease

	Call time.Duration `json:"call"` // the first attempt's start
	// Return is the definitive answer's end, or -1 when none came before the client gave up.
	Return   time.Duration `json:"return"`
	Attempts []Attempt     `json:"attempts"`
	// Resend is the same request sent once more after a successful answer, as a client that lost
	// that answer would: it must get the same one.
	Resend []Attempt `json:"resend,omitempty"`

	// Problems are what the checkers found wrong with this operation.
	Problems []string `json:"problems,omitempty"`
}

// Answer is the definitive attempt, nil when the operation was never answered.
func (op *Op) Answer() *Attempt { return lastDefinitive(op.Attempts) }

// ResendAnswer is the definitive attempt of the resend, nil when there was none or it was never
// answered.
func (op *Op) ResendAnswer() *Attempt { return lastDefinitive(op.Resend) }

func lastDefinitive(attempts []Attempt) *Attempt {
	if n := len(attempts); n > 0 && attempts[n-1].Definitive() {
		return &attempts[n-1]
	}
	return nil
}

// Retried tells whether some attempt before the answer failed.
func (op *Op) Retried() bool { return len(op.Attempts) > 1 || op.Answer() == nil }

func (op *Op) problem(format string, args ...any) {
	op.Problems = append(op.Problems, fmt.Sprintf(format, args...))
}

// Window is a fault: when it was injected and when it was healed, on the history's clock.
type Window struct {
	Name     string        `json:"name"`
	Injected time.Duration `json:"injected"`
	Healed   time.Duration `json:"healed"`
}

// History is what clients record: their operations, on one clock that starts with it.
type History struct {
	Start time.Time

	mu  sync.Mutex
	ops []*Op
}

// NewHistory starts a history on the clock that started at start: the histories of one run's
// cycles share it, so that their times compare.
func NewHistory(start time.Time) *History { return &History{Start: start} }

// Since is t on the history's clock.
func (h *History) Since(t time.Time) time.Duration { return t.Sub(h.Start) }

// Now is the history's clock.
func (h *History) Now() time.Duration { return time.Since(h.Start) }

// add records op, which its client goes on filling until its Return is set.
func (h *History) add(op *Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns the operations recorded so far, by call time. It is for when their clients have
// stopped.
func (h *History) Ops() []*Op {
	h.mu.Lock()
	ops := slices.Clone(h.ops)
	h.mu.Unlock()
	slices.SortStableFunc(ops, func(a, b *Op) int { return int(a.Call - b.Call) })
	return ops
}

// Of returns the operations on list.
func Of(ops []*Op, list string) []*Op {
	var out []*Op
	for _, op := range ops {
		if op.List == list {
			out = append(out, op)
		}
	}
	return out
}

// WriteHistory writes ops to dir as JSON lines, the operations with problems first, and returns
// the file's path: header is the first line (the seed, the faults, what was found).
func WriteHistory(dir, name string, header any, ops []*Op) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	err = enc.Encode(header)
	ordered := slices.Clone(ops)
	slices.SortStableFunc(ordered, func(a, b *Op) int {
		switch {
		case len(a.Problems) > 0 && len(b.Problems) == 0:
			return -1
		case len(a.Problems) == 0 && len(b.Problems) > 0:
			return 1
		}
		return 0
	})
	for _, op := range ordered {
		if err == nil {
			err = enc.Encode(op)
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return path, err
}
