package store

import "fmt"

// Limits bound what a store holds, so that a client cannot make the server run out of memory.
// A zero field is no limit.
type Limits struct {
	// MaxLinesPerList is the most lines one list may hold.
	MaxLinesPerList int64
	// MaxTotalBytes is the most memory the lists may hold together (the memory backend's): each
	// line's text and LineOverhead, each list's ListOverhead and name, each lease's LeaseOverhead
	// and id, each REQUEST_ID outcome's OutcomeCost, each line's UniqueOverhead in the UNIQUE
	// index of a list that has one. A change that would take the total over it is
	// refused before it is made; the memory that holds a REQUEST_ID's outcome is counted once the
	// change is made, and refuses the next ones.
	MaxTotalBytes int64
	// MaxLineBytes is the longest line accepted, in bytes.
	MaxLineBytes int64
	// MaxLists is the most lists the store may hold: a change that would create one more is
	// refused, and changes to the lists already there go on. The memory backend holds it exactly;
	// Redis may overshoot it by the creations that race on several servers (redis.Store).
	MaxLists int64
}

// Names of the limits in a LimitError: the table server's flags that set them.
const (
	LimitLinesPerList = "max-lines-per-list"
	LimitTotalBytes   = "max-total-bytes"
	LimitLineBytes    = "max-line-bytes"
	LimitLists        = "max-lists"
	// LimitRecordBytes is no flag: the most bytes the journal takes in the record of one change,
	// which bounds a bulk load (LOAD, INITFILE, a startup file) on a durable server.
	LimitRecordBytes = "journal-record-bytes"
)

// LimitError is a change refused because it would take a list or the store over a limit.
type LimitError struct {
	Limit string // LimitLinesPerList, LimitTotalBytes, LimitLineBytes, LimitLists or LimitRecordBytes
	Max   int64  // the limit's value
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("store: limit %s=%d exceeded", e.Limit, e.Max)
}

// What a store's memory costs beyond the text it holds, as counted against Limits.MaxTotalBytes:
// the Go heap each takes, measured (a string header and its share of a chunk for a line, the
// structs and map entries of a list, a lease and an outcome), rounded up.
const (
	LineOverhead    = 24
	ListOverhead    = 512
	LeaseOverhead   = 384
	OutcomeOverhead = 128
	// UniqueOverhead is a distinct line's entry in a list's UNIQUE index, which the first unique
	// ADD builds: up to 56 bytes a map entry measured, between a map's growths.
	UniqueOverhead = 64
)

// LineCost is what a line costs against Limits.MaxTotalBytes.
func LineCost(line string) int64 { return int64(len(line)) + LineOverhead }

// OutcomeCost is what the recorded outcome of request r, giving lines, costs against
// Limits.MaxTotalBytes.
func OutcomeCost(r Request, lines []string) int64 {
	cost := int64(OutcomeOverhead + len(r.ID) + len(r.Fingerprint))
	for _, line := range lines {
		cost += LineCost(line)
	}
	return cost
}

// Measure returns what lines cost (LineCost), or a *LimitError if one of them is longer than
// MaxLineBytes, there are more than a list may hold, or they cost more than MaxTotalBytes.
func (lim Limits) Measure(lines []string) (int64, error) {
	if lim.MaxLinesPerList > 0 && int64(len(lines)) > lim.MaxLinesPerList {
		return 0, &LimitError{Limit: LimitLinesPerList, Max: lim.MaxLinesPerList}
	}
	var size int64
	for _, line := range lines {
		if lim.MaxLineBytes > 0 && int64(len(line)) > lim.MaxLineBytes {
			return 0, &LimitError{Limit: LimitLineBytes, Max: lim.MaxLineBytes}
		}
		size += LineCost(line)
	}
	if lim.MaxTotalBytes > 0 && size > lim.MaxTotalBytes {
		return 0, &LimitError{Limit: LimitTotalBytes, Max: lim.MaxTotalBytes}
	}
	return size, nil
}
