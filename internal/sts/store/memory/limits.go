package memory

import "github.com/sts-operator/sts-operator/internal/sts/store"

// admit checks that a list may hold count lines and reserves grow more bytes in the store's total
// (a negative grow gives bytes back). The bytes an admitted change adds are thereby accounted for
// before the change is made, so that concurrent changes to other lists cannot overshoot together.
func (m *Memory) admit(count int, grow int64) error {
	if lim := m.limits.MaxLinesPerList; lim > 0 && int64(count) > lim {
		return &store.LimitError{Limit: store.LimitLinesPerList, Max: lim}
	}
	limit := m.limits.MaxTotalBytes
	if grow <= 0 || limit <= 0 {
		m.bytes.Add(grow)
		return nil
	}
	for {
		total := m.bytes.Load()
		if total+grow > limit {
			return &store.LimitError{Limit: store.LimitTotalBytes, Max: limit}
		}
		if m.bytes.CompareAndSwap(total, total+grow) {
			return nil
		}
	}
}

// lookupOrReserve returns the list called name. If there is none, it first admits a new list of
// count lines and size bytes (and one list more), so that a change refused by a limit creates nothing; reserved is
// then size, which the change's own admission (readmit) takes into account.
func (m *Memory) lookupOrReserve(name string, count int, size int64) (l *list, created bool, reserved int64, err error) {
	if l := m.lookup(name); l != nil {
		return l, false, 0, nil
	}
	if err := m.admit(count, size); err != nil {
		return nil, false, 0, err
	}
	l, created, err = m.lookupOrCreateLimited(name)
	if err != nil {
		m.bytes.Add(-size)
		return nil, false, 0, err
	}
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
