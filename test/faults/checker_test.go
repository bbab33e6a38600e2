package faults

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// The checkers must go red on each kind of broken history, and stay green on a sound one: the
// histories here are written by hand, each with the one fault it is named after.

const ms = time.Millisecond

// answered is an operation answered at ret (ms) with status and answer after one attempt at call.
func answered(kind Kind, id string, call, ret int, status int, answer protocol.Answer) *Op {
	op := &Op{ID: id, Kind: kind, List: "q", Call: time.Duration(call) * ms, Return: time.Duration(ret) * ms}
	op.Attempts = []Attempt{{Start: op.Call, End: op.Return, Status: status, Answer: &answer}}
	return op
}

func ok(kind Kind, id string, call, ret int) *Op {
	return answered(kind, id, call, ret, http.StatusOK, protocol.Answer{OK: true})
}

func read(id string, call, ret int, line string) *Op {
	return answered(Read, id, call, ret, http.StatusOK, protocol.Answer{OK: true, Value: &line})
}

func leaseRead(id string, call, ret int, line, lease string, expires int) *Op {
	op := answered(LeaseRead, id, call, ret, http.StatusOK, protocol.Answer{OK: true, Value: &line, Lease: &lease})
	op.Attempts[0].ExpiresAt = time.Duration(expires) * ms
	return op
}

func end(kind Kind, id string, call, ret int, lease string) *Op {
	op := ok(kind, id, call, ret)
	op.Lease = lease
	return op
}

func add(id string, call, ret int, line string) *Op {
	op := ok(Add, id, call, ret)
	op.Line = line
	return op
}

// unanswered is an operation whose every attempt failed until the client gave up.
func unanswered(kind Kind, id string, call int) *Op {
	op := &Op{ID: id, Kind: kind, List: "q", Call: time.Duration(call) * ms, Return: -1}
	op.Attempts = []Attempt{{Start: op.Call, End: op.Call + 3*time.Second, Err: "context deadline exceeded"},
		{Start: op.Call + 4*time.Second, End: op.Call + 4*time.Second, Status: 503, Answer: &protocol.Answer{Reason: "outcome_unknown"}}}
	return op
}

// sound is a history that keeps every promise: a, b, c loaded; a read; b leased and acknowledged;
// c leased, its lease run out, then read; d added and left; e added, released after a lease.
func sound() QueueInput {
	retried := read("r1", 0, 900, "a")
	retried.Attempts = append([]Attempt{{Start: 0, End: 300 * ms, Err: "connection reset by peer"}}, retried.Attempts...)
	retried.Attempts[1].Start = 400 * ms
	return QueueInput{Loaded: []string{"a", "b", "c"}, Ops: []*Op{
		retried,
		leaseRead("l1", 1000, 1010, "b", "L1", 3000),
		end(Ack, "k1", 1100, 1110, "L1"),
		leaseRead("l2", 1200, 1210, "c", "L2", 2000),
		read("r2", 2100, 2110, "c"),
		add("a1", 2200, 2210, "d"),
		add("a2", 2300, 2310, "e"),
		leaseRead("l3", 2400, 2410, "e", "L3", 9000),
		end(Release, "rl3", 2500, 2510, "L3"),
		leaseRead("l4", 2600, 2610, "e", "L4", 4000), // after the RELEASE, before L3's expiry
	}, Final: []string{"d", "e"}}
}

func TestCheckQueuePassesASoundHistory(t *testing.T) {
	v := CheckQueue(sound())
	if v.Failed() {
		t.Fatalf("%s\n%s", v.String(), strings.Join(v.Problems, "\n"))
	}
	if v.Lines != 5 || v.Ops != 10 {
		t.Errorf("%d lines, %d operations; want 5 and 10", v.Lines, v.Ops)
	}
}

// Each case breaks the sound history in one way, and names the count that must say so.
func TestCheckQueueFindsEachViolation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(in *QueueInput)
		count func(v Verdict) int
	}{
		{"a loaded line neither read nor left", func(in *QueueInput) { in.Final = []string{"d"} },
			func(v Verdict) int { return v.Lost }},
		{"an acknowledged ADD's line gone", func(in *QueueInput) { in.Final = []string{"e"} },
			func(v Verdict) int { return v.Lost }},
		{"a line read twice", func(in *QueueInput) { in.Ops = append(in.Ops, read("r3", 3000, 3010, "a")) },
			func(v Verdict) int { return v.Duplicated }},
		{"a read line still in the list", func(in *QueueInput) { in.Final = append(in.Final, "a") },
			func(v Verdict) int { return v.Duplicated }},
		{"a line left twice", func(in *QueueInput) { in.Final = append(in.Final, "d") },
			func(v Verdict) int { return v.Duplicated }},
		{"an acknowledged lease's line back", func(in *QueueInput) { in.Final = append(in.Final, "b") },
			func(v Verdict) int { return v.Duplicated }},
		{"a line handed out under a lease after it was consumed", func(in *QueueInput) {
			in.Ops = append(in.Ops, leaseRead("l9", 5000, 5010, "a", "L9", 6000))
		}, func(v Verdict) int { return v.Duplicated }},
		{"a leased line handed out before its lease ended", func(in *QueueInput) {
			in.Ops[4] = read("r2", 1500, 1510, "c") // L2 runs until 2000
		}, func(v Verdict) int { return v.Duplicated }},
		{"a line nobody loaded or added", func(in *QueueInput) { in.Ops = append(in.Ops, read("r4", 3000, 3010, "zz")) },
			func(v Verdict) int { return v.Unexpected }},
		{"an id never answered", func(in *QueueInput) { in.Ops = append(in.Ops, unanswered(Read, "u1", 3000)) },
			func(v Verdict) int { return v.Unanswered }},
		{"a resend answered with another line", func(in *QueueInput) {
			other := "d"
			in.Ops[0].Resend = []Attempt{{Status: 200, Answer: &protocol.Answer{OK: true, Value: &other}}}
			in.Final = []string{"e"} // the resend took d
		}, func(v Verdict) int { return v.Wrong }},
		{"a resend never answered", func(in *QueueInput) {
			in.Ops[0].Resend = []Attempt{{Status: 409, Answer: &protocol.Answer{Reason: "in_progress"}}}
		}, func(v Verdict) int { return v.Unanswered }},
		{"an id refused as reused", func(in *QueueInput) {
			in.Ops = append(in.Ops, answered(Read, "x", 3000, 3010, 422, protocol.Answer{Reason: "request_id_reused"}))
		}, func(v Verdict) int { return v.Wrong }},
		{"a UNIQUE ADD told its own line is a duplicate", func(in *QueueInput) {
			dup := answered(Add, "a3", 3000, 3010, 409, protocol.Answer{Reason: "duplicate"})
			dup.Line, dup.Unique = "f", true
			in.Ops = append(in.Ops, dup)
			in.Final = append(in.Final, "f")
		}, func(v Verdict) int { return v.Wrong }},
		{"an answer that is not JSON", func(in *QueueInput) {
			op := ok(Read, "j", 3000, 3010)
			op.Attempts[0].Answer, op.Attempts[0].Body = nil, "<html>"
			in.Ops = append(in.Ops, op)
		}, func(v Verdict) int { return v.Wrong }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := sound()
			tc.spoil(&in)
			v := CheckQueue(in)
			if tc.count(v) != 1 {
				t.Errorf("%s; want the case counted once\n%s", v.String(), strings.Join(v.Problems, "\n"))
			}
		})
	}
}

// A line whose lease's ACK was never answered may be gone: it is not lost, the unanswered ACK
// is what is counted.
// A lost line has no operation of its own: the ones that may have taken it come first in the
// history, those whose attempt ended without its client knowing whether it ran.
func TestCheckQueueNamesWhatMayHaveTakenALostLine(t *testing.T) {
	in := sound()
	in.Final = []string{"d"} // e lost
	v := CheckQueue(in)
	cut, add := in.Ops[0], in.Ops[5] // r1's first attempt was reset; a1 was answered at once
	if v.Lost != 1 || len(cut.Problems) != 1 || len(add.Problems) != 0 {
		t.Errorf("%s; problems of the READ with an attempt cut %q, of an ADD %q", v.String(), cut.Problems, add.Problems)
	}
}

func TestCheckQueueCountsAnUnansweredAckOnce(t *testing.T) {
	in := sound()
	ack := unanswered(Ack, "k1", 1100)
	ack.Lease = "L1"
	in.Ops[2] = ack
	v := CheckQueue(in)
	if v.Unanswered != 1 || v.Lost != 0 || v.Duplicated != 0 {
		t.Errorf("%s; want 1 unanswered only", v.String())
	}
}

func TestCheckReload(t *testing.T) {
	file := []string{"a", "b", "c", "d"}
	sound := func() ReloadInput {
		return ReloadInput{File: file, Reload: ok(Reload, "rl", 1000, 2000), Ops: []*Op{
			leaseRead("l1", 0, 10, "a", "L1", 5000), // ended by the RELOAD, a back from the file
			end(Ack, "k1", 2500, 2510, "L1"),        // refused below
			leaseRead("l2", 2600, 2610, "b", "L2", 6000),
			end(Ack, "k2", 2700, 2710, "L2"),
		}, Final: []string{"a", "c", "d"}}
	}
	in := sound()
	in.Ops[1].Attempts[0].Status, in.Ops[1].Attempts[0].Answer = 404, &protocol.Answer{Reason: "lease_not_found"}
	if v := CheckReload(in); v.Failed() {
		t.Fatalf("sound history: %s\n%s", v.String(), strings.Join(v.Problems, "\n"))
	}
	// The failure: a lease taken before the RELOAD survived it, its line came back
	// beside the reloaded copy.
	in = sound()
	in.Ops = in.Ops[2:]
	in.Final = []string{"a", "a", "c", "d"}
	if v := CheckReload(in); v.Duplicated != 1 {
		t.Errorf("a line twice after the RELOAD: %s", v.String())
	}
	in = sound()
	if v := CheckReload(in); v.Wrong != 1 {
		t.Errorf("a lease from before the RELOAD acknowledged after it: %s", v.String())
	}
	in = sound()
	in.Ops[1].Attempts[0].Status, in.Ops[1].Attempts[0].Answer = 404, &protocol.Answer{Reason: "lease_not_found"}
	in.Final = []string{"a", "c"}
	if v := CheckReload(in); v.Lost != 1 {
		t.Errorf("a line of the file gone: %s", v.String())
	}
	in = sound()
	in.Reload = unanswered(Reload, "rl", 1000)
	if v := CheckReload(in); v.Unanswered != 1 {
		t.Errorf("a RELOAD never answered: %s", v.String())
	}
}

func TestCheckFIFO(t *testing.T) {
	fifo := func(ops ...*Op) []*Op {
		for i, op := range ops {
			op.Client = i % 2
		}
		return ops
	}
	emptyRead := func(id string, call, ret int) *Op {
		return answered(Read, id, call, ret, 404, protocol.Answer{Reason: "empty"})
	}
	for _, tc := range []struct {
		name  string
		ops   []*Op
		final []string
		want  porcupine.CheckResult
	}{
		{"in order", fifo(add("a1", 0, 10, "x"), add("a2", 20, 30, "y"), read("r1", 40, 50, "x"), read("r2", 60, 70, "y"), emptyRead("r3", 80, 90)), nil, porcupine.Ok},
		{"concurrent adds, either order", fifo(add("a1", 0, 100, "x"), add("a2", 0, 100, "y"), read("r1", 200, 210, "y"), read("r2", 220, 230, "x")), nil, porcupine.Ok},
		{"out of order", fifo(add("a1", 0, 10, "x"), add("a2", 20, 30, "y"), read("r1", 40, 50, "y")), []string{"x"}, porcupine.Illegal},
		{"read twice", fifo(add("a1", 0, 10, "x"), read("r1", 20, 30, "x"), read("r2", 40, 50, "x")), nil, porcupine.Illegal},
		{"empty while a line is in", fifo(add("a1", 0, 10, "x"), emptyRead("r1", 20, 30)), []string{"x"}, porcupine.Illegal},
		{"an acknowledged add gone", fifo(add("a1", 0, 10, "x")), nil, porcupine.Illegal},
		// Never answered: it may have taken effect, or not.
		{"an unanswered read took a line", fifo(add("a1", 0, 10, "x"), add("a2", 20, 30, "y"), unanswered(Read, "u", 40), read("r1", 5000, 5010, "y")), nil, porcupine.Ok},
		{"an unanswered read took nothing", fifo(add("a1", 0, 10, "x"), unanswered(Read, "u", 20)), []string{"x"}, porcupine.Ok},
		{"an unanswered add made", fifo(withLine(unanswered(Add, "u", 0), "x")), []string{"x"}, porcupine.Ok},
		{"an unanswered add not made", fifo(withLine(unanswered(Add, "u", 0), "x")), nil, porcupine.Ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckFIFO(FIFOHistory(tc.ops, tc.final), 10*time.Second, "")
			if err != nil || got != tc.want {
				t.Errorf("%s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func withLine(op *Op, line string) *Op {
	op.Line = line
	return op
}

func TestRecoveryWaits(t *testing.T) {
	w := Window{Injected: 1000 * ms, Healed: 7000 * ms}
	retriedAcross := read("r1", 2000, 7400, "a")
	retriedAcross.Attempts = append([]Attempt{{Start: 2000 * ms, End: 5000 * ms, Err: "timeout"}}, retriedAcross.Attempts...)
	answeredBefore := read("r2", 2000, 6000, "b")
	answeredBefore.Attempts = append([]Attempt{{Err: "refused"}}, answeredBefore.Attempts...)
	neverFailed := read("r3", 6900, 7100, "c")
	got := RecoveryWaits([]*Op{retriedAcross, answeredBefore, neverFailed, unanswered(Read, "u", 3000)}, w)
	if len(got) != 1 || got[0] != 400*ms {
		t.Errorf("waits %v, want [400ms]: the one client retrying across the healing", got)
	}
	if p := Percentile([]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50); p != 5 {
		t.Errorf("p50 %v", p)
	}
	if p := Percentile([]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99); p != 10 {
		t.Errorf("p99 %v", p)
	}
}

func TestAmbiguous(t *testing.T) {
	refused := read("r1", 0, 100, "a")
	refused.Attempts = append([]Attempt{{Err: "dial tcp 127.0.0.1:1: connect: connection refused"}}, refused.Attempts...)
	cut := read("r2", 0, 100, "b")
	cut.Attempts = append([]Attempt{{Err: "read: connection reset by peer"}}, cut.Attempts...)
	unknown := read("r3", 0, 100, "c")
	unknown.Attempts = append([]Attempt{{Status: 503, Answer: &protocol.Answer{Reason: "outcome_unknown"}}}, unknown.Attempts...)
	unavailable := read("r4", 0, 100, "d")
	unavailable.Attempts = append([]Attempt{{Status: 503, Answer: &protocol.Answer{Reason: "backend_unavailable"}}}, unavailable.Attempts...)
	if n := Ambiguous([]*Op{refused, cut, unknown, unavailable, read("r5", 0, 10, "e")}); n != 2 {
		t.Errorf("%d ambiguous, want 2: the reset and the outcome_unknown, not what was refused before it ran", n)
	}
}
