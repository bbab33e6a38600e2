package faults

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Verdict is what a check found: the three counts, the other violations, and a line for
// each problem.
type Verdict struct {
	Lines      int // lines followed: loaded, and added with an acknowledgement
	Ops        int
	Lost       int // loaded or acknowledged-added lines neither consumed nor left at the end
	Duplicated int // lines consumed twice, left twice, consumed and left, or held by two leases at once
	Unanswered int // REQUEST_IDs retried until the client gave up without a definitive answer
	Unexpected int // lines handed out or left that nobody loaded or added
	Wrong      int // answers that contradict the one execution (422, a resend answered otherwise, ...)
	Problems   []string
}

// Failed tells whether anything was found.
func (v *Verdict) Failed() bool {
	return v.Lost+v.Duplicated+v.Unanswered+v.Unexpected+v.Wrong > 0 || len(v.Problems) > 0
}

// Merge adds o's counts and problems to v.
func (v *Verdict) Merge(o Verdict) {
	v.Lines += o.Lines
	v.Ops += o.Ops
	v.Lost += o.Lost
	v.Duplicated += o.Duplicated
	v.Unanswered += o.Unanswered
	v.Unexpected += o.Unexpected
	v.Wrong += o.Wrong
	v.Problems = append(v.Problems, o.Problems...)
}

func (v *Verdict) String() string {
	return fmt.Sprintf("%d lost, %d duplicated, %d unanswered, %d unexpected, %d wrong answers (%d lines, %d operations)",
		v.Lost, v.Duplicated, v.Unanswered, v.Unexpected, v.Wrong, v.Lines, v.Ops)
}

func (v *Verdict) problem(format string, args ...any) {
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

// leaseMargin is how much earlier than its expiry a leased line may be handed out again: the
// expiry is the server's clock rendered to the millisecond, the hand-out the client's.
const leaseMargin = 250 * time.Millisecond

// handout is a line handed out by an OK READ or FIND: for good (terminal), or under a lease.
type handout struct {
	op   *Op
	line string
	// terminal: consumed for good, by KEEP=FALSE or an acknowledged ACK (consumedBy: its op).
	terminal   bool
	consumedBy *Op
	// A lease's id; endsBy, the earliest its line may be handed out again: its expiry, or the
	// first RELEASE or ACK sent for it (the line may be back or gone from then on); and whether
	// an ACK of it was never answered.
	lease      string
	endsBy     time.Duration
	ackUnknown bool
}

// consumedAt is when the consumption of a terminal hand-out was answered.
func (h *handout) consumedAt() time.Duration { return h.consumedBy.Return }

// checkAnswers does the checks every operation gets, whatever its list: answered, not refused as
// a reused id, decodable, and answered alike when sent again.
func checkAnswers(v *Verdict, ops []*Op) {
	for _, op := range ops {
		v.Ops++
		a := op.Answer()
		switch {
		case a == nil:
			v.Unanswered++
			op.problem("never answered: %d attempts from %v to %v", len(op.Attempts), op.Call, op.Attempts[len(op.Attempts)-1].End)
			v.problem("%s %s (%s) never answered after %d attempts", op.Kind, op.ID, op.List, len(op.Attempts))
			continue
		case a.Answer == nil:
			v.Wrong++
			op.problem("answer %d is not JSON: %q", a.Status, a.Body)
			v.problem("%s %s answered %d, not JSON: %q", op.Kind, op.ID, a.Status, a.Body)
		case a.Status == 422:
			v.Wrong++
			op.problem("refused as a reused REQUEST_ID: %s", a.Answer.Error)
			v.problem("%s %s refused 422 %s", op.Kind, op.ID, a.Answer.Reason)
		}
		if len(op.Resend) == 0 {
			continue
		}
		r := op.ResendAnswer()
		switch {
		case r == nil:
			v.Unanswered++
			op.problem("its resend was never answered: %d attempts", len(op.Resend))
			v.problem("%s %s: the resend of an answered request was never answered", op.Kind, op.ID)
		case !sameAnswer(a, r):
			v.Wrong++
			op.problem("sent again, answered %s instead of %s", describe(r), describe(a))
			v.problem("%s %s answered %s, then %s to the same request", op.Kind, op.ID, describe(a), describe(r))
		}
	}
}

// sameAnswer tells whether two answers to one request say the same: the one execution's outcome.
func sameAnswer(a, b *Attempt) bool {
	if a.Status != b.Status || a.Answer == nil || b.Answer == nil {
		return a.Status == b.Status && a.Answer == nil && b.Answer == nil
	}
	x, y := a.Answer, b.Answer
	return x.OK == y.OK && x.Command == y.Command && x.Reason == y.Reason && equalPtr(x.Value, y.Value) &&
		equalPtr(x.Lease, y.Lease) && equalPtr(x.Length, y.Length) && slices.Equal(x.Values, y.Values)
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// describe is an attempt's outcome in a few words, for problems.
func describe(a *Attempt) string {
	switch {
	case a == nil:
		return "nothing"
	case a.Err != "":
		return "error " + a.Err
	case a.Answer == nil:
		return fmt.Sprintf("%d %q", a.Status, a.Body)
	}
	s := fmt.Sprintf("%d", a.Status)
	if a.Answer.Reason != "" {
		s += " " + a.Answer.Reason
	}
	if a.Answer.Value != nil {
		s += fmt.Sprintf(" %q", *a.Answer.Value)
	}
	if a.Answer.Lease != nil {
		s += " lease " + *a.Answer.Lease
	}
	return s
}

// handouts collects the lines ops handed out, with what ACK and RELEASE did to their leases.
func handouts(ops []*Op) (byLine map[string][]*handout, leases map[string]*handout) {
	byLine, leases = map[string][]*handout{}, map[string]*handout{}
	for _, op := range ops {
		a := op.Answer()
		if a == nil {
			continue
		}
		value, ok := a.Value()
		switch {
		case !ok:
		case op.Kind == Read || op.Kind == Find:
			byLine[value] = append(byLine[value], &handout{op: op, line: value, terminal: true, consumedBy: op})
			// A resend answered with another line took that line too: it is the answer that is
			// wrong (checkAnswers), not that line lost.
			if r := op.ResendAnswer(); r != nil {
				if other, ok := r.Value(); ok && other != value {
					byLine[other] = append(byLine[other], &handout{op: op, line: other, terminal: true, consumedBy: op})
				}
			}
		case op.Kind == LeaseRead && a.Answer.Lease != nil:
			h := &handout{op: op, line: value, lease: *a.Answer.Lease, endsBy: a.ExpiresAt}
			leases[h.lease] = h
			byLine[value] = append(byLine[value], h)
		}
	}
	for _, op := range ops {
		if op.Kind != Ack && op.Kind != Release {
			continue
		}
		h := leases[op.Lease]
		if h == nil {
			continue
		}
		h.endsBy = min(h.endsBy, op.Call)
		a := op.Answer()
		switch {
		case op.Kind == Ack && a == nil:
			h.ackUnknown = true
		case op.Kind == Ack && a.OK() && (h.consumedBy == nil || op.Return < h.consumedBy.Return):
			h.terminal, h.consumedBy = true, op
		}
	}
	return byLine, leases
}

// QueueInput is one list's part of a history, for CheckQueue.
type QueueInput struct {
	List   string
	Loaded []string // the lines the list held when its operations began (an acknowledged LOAD)
	Ops    []*Op    // every operation on the list
	Final  []string // the list at the end, once every lease has ended
}

// CheckQueue is the total-queue check of one list: every line loaded or acknowledged-added is
// consumed (by a READ or FIND KEEP=FALSE, or a leased READ whose ACK was acknowledged) at most
// once, counting every attempt of one REQUEST_ID as one, and is consumed or still in the list at
// the end; a leased line is handed out to nobody else until its lease ends, and never after it was
// consumed; every operation got a definitive answer, the same one when sent again.
func CheckQueue(in QueueInput) Verdict {
	var v Verdict
	checkAnswers(&v, in.Ops)
	known, acked := map[string]bool{}, map[string]bool{}
	for _, l := range in.Loaded {
		known[l], acked[l] = true, true
	}
	for _, op := range in.Ops {
		if op.Kind != Add {
			continue
		}
		known[op.Line] = true
		a := op.Answer()
		if a != nil && a.OK() {
			acked[op.Line] = true
		}
		// Only this operation adds its line: a duplicate is an attempt of its own that ran.
		if op.Unique && a != nil && a.Status == 409 && a.Reason() == "duplicate" {
			v.Wrong++
			op.problem("UNIQUE ADD of a line only it adds answered duplicate: an earlier attempt added it")
			v.problem("ADD %s of %q answered duplicate, its own earlier attempt having added it", op.ID, op.Line)
		}
	}
	v.Lines = len(acked)
	byLine, _ := handouts(in.Ops)
	present := counts(in.Final)
	for _, line := range sortedKeys(byLine, present, acked) {
		hs := byLine[line]
		switch {
		case !known[line]:
			v.Unexpected++
			v.problem("line %q handed out %d times and left %d times, but nobody loaded or added it", line, len(hs), present[line])
			blame(hs, "handed out %q, which nobody loaded or added", line)
		case duplicate(&v, line, hs, present[line]):
		case acked[line] && present[line] == 0 && !consumed(hs):
			v.Lost++
			v.problem("line %q lost: loaded or acknowledged-added, never consumed, not in the list at the end%s", line, handedOutBy(hs))
			blame(hs, "handed out %q, which was then lost", line)
		}
	}
	suspect(&v, in.Ops)
	return v
}

// ReloadInput is a RELOAD's part of a history, for CheckReload.
type ReloadInput struct {
	List   string
	File   []string // the list's startup source: the list before the run and after the RELOAD
	Reload *Op
	Ops    []*Op    // the other operations on the list
	Final  []string // the list at the end, once every lease has ended
}

// CheckReload checks a RELOAD among leased READs: it ends the leases taken before it (an ACK
// sent after its answer of a lease taken before its call is refused), so that no line is in the
// list twice once the leases have ended; after it, the list is the file less what was consumed
// since, each line consumed at most once, and none lost.
func CheckReload(in ReloadInput) Verdict {
	var v Verdict
	checkAnswers(&v, append([]*Op{in.Reload}, in.Ops...))
	v.Lines = len(in.File)
	started, answered := in.Reload.Call, in.Reload.Return
	if answered < 0 {
		answered = 1<<62 - 1
	}
	byLine, leases := handouts(in.Ops)
	for _, op := range in.Ops {
		if op.Kind != Ack || op.Answer() == nil || !op.Answer().OK() || op.Call <= answered {
			continue
		}
		if h := leases[op.Lease]; h != nil && h.op.Return < started {
			v.Wrong++
			op.problem("acknowledged lease %s, taken before the RELOAD %s and acknowledged after its answer", op.Lease, in.Reload.ID)
			v.problem("ACK %s of lease %s (line %q, READ %s before the RELOAD) acknowledged after the RELOAD answered", op.ID, op.Lease, h.line, h.op.ID)
		}
	}
	inFile := map[string]bool{}
	for _, l := range in.File {
		inFile[l] = true
	}
	present := counts(in.Final)
	for _, line := range sortedKeys(byLine, present, inFile) {
		hs := byLine[line]
		var since []*handout // handed out from the reloaded list
		for _, h := range hs {
			if h.op.Call > answered {
				since = append(since, h)
			}
		}
		switch {
		case !inFile[line]:
			v.Unexpected++
			v.problem("line %q handed out %d times and left %d times, but the file does not hold it", line, len(hs), present[line])
		case duplicate(&v, line, since, present[line]):
		case present[line] == 0 && !consumedAfter(hs, started):
			v.Lost++
			v.problem("line %q lost: in the reloaded file, not consumed since the RELOAD began, not in the list at the end%s", line, handedOutBy(hs))
		}
	}
	suspect(&v, in.Ops)
	return v
}

// duplicate counts line as duplicated in v, and says why, when its hand-outs and its count at the
// end show it twice: consumed twice or consumed and left, handed out after it was consumed, or
// handed out while a lease held it.
func duplicate(v *Verdict, line string, hs []*handout, present int) bool {
	var terminals []*handout
	for _, h := range hs {
		if h.terminal {
			terminals = append(terminals, h)
		}
	}
	why := ""
	if len(terminals)+present > 1 {
		why = fmt.Sprintf("consumed %d times%s and left %d times at the end", len(terminals), handedOutBy(terminals), present)
	}
	for _, t := range terminals {
		for _, h := range hs {
			if why == "" && h != t && h.op.Call > t.consumedAt() {
				why = fmt.Sprintf("handed out by %s %s at %v, after %s consumed it (answered at %v)", h.op.Kind, h.op.ID, h.op.Call, t.consumedBy.ID, t.consumedAt())
			}
		}
	}
	for _, l := range hs {
		for _, h := range hs {
			if why == "" && l.lease != "" && h != l && h.op.Call > l.op.Return && h.op.Return < l.endsBy-leaseMargin {
				why = fmt.Sprintf("handed out by %s %s (answered at %v) while lease %s of %s held it (until %v)", h.op.Kind, h.op.ID, h.op.Return, l.lease, l.op.ID, l.endsBy)
			}
		}
	}
	if why == "" {
		return false
	}
	v.Duplicated++
	v.problem("line %q duplicated: %s", line, why)
	blame(hs, "handed out %q, which was duplicated: %s", line, why)
	return true
}

// consumed tells whether some hand-out consumed its line for good, or may have: an ACK of its
// lease never answered.
func consumed(hs []*handout) bool { return consumedAfter(hs, -1) }

func consumedAfter(hs []*handout, t time.Duration) bool {
	for _, h := range hs {
		if h.terminal && h.consumedAt() > t || h.ackUnknown {
			return true
		}
	}
	return false
}

func blame(hs []*handout, format string, args ...any) {
	for _, h := range hs {
		h.op.problem(format, args...)
	}
}

func handedOutBy(hs []*handout) string {
	if len(hs) == 0 {
		return ""
	}
	var ids []string
	for _, h := range hs {
		id := h.op.ID
		if h.consumedBy != nil && h.consumedBy != h.op {
			id += " (ACK " + h.consumedBy.ID + ")"
		}
		ids = append(ids, id)
	}
	return " (by " + strings.Join(ids, ", ") + ")"
}

func counts(lines []string) map[string]int {
	n := make(map[string]int, len(lines))
	for _, l := range lines {
		n[l]++
	}
	return n
}

// sortedKeys are the keys of the maps, sorted, so that problems come in the same order each run.
func sortedKeys[A, B, C any](a map[string]A, b map[string]B, c map[string]C) []string {
	seen := make(map[string]bool, len(a)+len(b)+len(c))
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	for k := range c {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// RecoveryWaits are, for each operation a client was still retrying when w was healed, how long
// after the healing its answer came: what a client waits once the fault is over. Operations never
// answered are not in it (Verdict.Unanswered counts them).
func RecoveryWaits(ops []*Op, w Window) []time.Duration {
	var waits []time.Duration
	for _, op := range ops {
		if op.Retried() && op.Call < w.Healed && op.Return > w.Healed {
			waits = append(waits, op.Return-w.Healed)
		}
	}
	return waits
}

// Percentile is the p-th percentile of ds (nearest rank), 0 when ds is empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// Ambiguous counts the operations that met an attempt whose outcome the client could not know:
// cut off after it was sent (a timeout, a reset, an EOF, anything but a refused connection), or
// answered that it may have been made (503 outcome_unknown or not_recorded, 409 in_progress).
// Only their REQUEST_ID can answer them once: a fault that makes none tests nothing of it.
func Ambiguous(ops []*Op) int {
	n := 0
	for _, op := range ops {
		if ambiguous(op) {
			n++
		}
	}
	return n
}

func ambiguous(op *Op) bool {
	for _, a := range slices.Concat(op.Attempts, op.Resend) {
		if a.Err != "" && !strings.Contains(a.Err, "connection refused") ||
			a.Reason() == "outcome_unknown" || a.Reason() == "not_recorded" || a.Reason() == "in_progress" {
			return true
		}
	}
	return false
}

// suspect marks the operations that may have taken the lost lines of v: those that consume and
// had an attempt whose outcome their client could not know. A lost line has no operation of its
// own; these are where its history is to be read, and the history file puts them first.
func suspect(v *Verdict, ops []*Op) {
	if v.Lost == 0 {
		return
	}
	var ids []string
	for _, op := range ops {
		if (op.Kind == Read || op.Kind == Find || op.Kind == LeaseRead || op.Kind == Ack) && ambiguous(op) {
			op.problem("an attempt of it may have run unanswered: it may have taken one of the %d lost lines", v.Lost)
			ids = append(ids, op.ID)
		}
	}
	v.problem("operations that may have taken the lost lines (an attempt whose outcome was not known): %s", strings.Join(ids[:min(len(ids), 20)], ", "))
}
