package store

import "fmt"

// Limits bound what a Memory holds, so that a client cannot make the server run out of memory.
// A zero field is no limit.
type Limits struct {
	// MaxLinesPerList is the most lines one list may hold.
	MaxLinesPerList int64
	// MaxTotalBytes is the most bytes the lines of all lists may hold together: the lines' text
	// (UTF-8), not the 16 to 32 bytes of bookkeeping each line costs on top of it.
	MaxTotalBytes int64
	// MaxLineBytes is the longest line accepted, in bytes.
	MaxLineBytes int64
}

// Names of the limits in a LimitError: the table server's flags that set them.
const (
	LimitLinesPerList = "max-lines-per-list"
	LimitTotalBytes   = "max-total-bytes"
	LimitLineBytes    = "max-line-bytes"
	// LimitRecordBytes is no flag: the most bytes the journal takes in the record of one change,
	// which bounds a bulk load (LOAD, INITFILE, a startup file) on a durable server.
	LimitRecordBytes = "journal-record-bytes"
)

// LimitError is a change refused because it would take a list or the store over a limit.
type LimitError struct {
	Limit string // LimitLinesPerList, LimitTotalBytes, LimitLineBytes or LimitRecordBytes
	Max   int64  // the limit's value
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("store: limit %s=%d exceeded", e.Limit, e.Max)
}

// measure returns the bytes of lines, or a *LimitError if one of them is longer than
// MaxLineBytes or there are more than a list may hold.
func (lim Limits) measure(lines []string) (int64, error) {
	if lim.MaxLinesPerList > 0 && int64(len(lines)) > lim.MaxLinesPerList {
		return 0, &LimitError{LimitLinesPerList, lim.MaxLinesPerList}
	}
	var size int64
	for _, line := range lines {
		if lim.MaxLineBytes > 0 && int64(len(line)) > lim.MaxLineBytes {
			return 0, &LimitError{LimitLineBytes, lim.MaxLineBytes}
		}
		size += int64(len(line))
	}
	if lim.MaxTotalBytes > 0 && size > lim.MaxTotalBytes {
		return 0, &LimitError{LimitTotalBytes, lim.MaxTotalBytes}
	}
	return size, nil
}

// admit checks that a list may hold count lines and reserves grow more bytes in the store's total
// (a negative grow gives bytes back). The bytes an admitted change adds are thereby accounted for
// before the change is made, so that concurrent changes to other lists cannot overshoot together.
func (m *Memory) admit(count int, grow int64) error {
	if lim := m.limits.MaxLinesPerList; lim > 0 && int64(count) > lim {
		return &LimitError{LimitLinesPerList, lim}
	}
	limit := m.limits.MaxTotalBytes
	if grow <= 0 || limit <= 0 {
		m.bytes.Add(grow)
		return nil
	}
	for {
		total := m.bytes.Load()
		if total+grow > limit {
			return &LimitError{LimitTotalBytes, limit}
		}
		if m.bytes.CompareAndSwap(total, total+grow) {
			return nil
		}
	}
}

// lookupOrReserve returns the list called name. If there is none, it first admits a new list of
// count lines and size bytes, so that a change refused by a limit creates nothing; reserved is
// then size, which the change's own admission (readmit) takes into account.
func (m *Memory) lookupOrReserve(name string, count int, size int64) (l *list, created bool, reserved int64, err error) {
	if l := m.lookup(name); l != nil {
		return l, false, 0, nil
	}
	if err := m.admit(count, size); err != nil {
		return nil, false, 0, err
	}
	l, created = m.lookupOrCreate(name)
	return l, created, size, nil
}

// readmit admits a change of grow bytes to a list that will hold count lines, of which reserved
// bytes were admitted already; if it is refused, the reservation is given back.
func (m *Memory) readmit(count int, grow, reserved int64) error {
	if err := m.admit(count, grow-reserved); err != nil {
		m.bytes.Add(-reserved)
		return err
	}
	return nil
}
