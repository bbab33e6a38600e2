package memory

import "slices"

// A FIND tests lines with a client's regular expression, which may spend its whole budget
// (--regex-timeout) on one line: under the list's lock, every writer would wait for it. So a FIND
// scans off the lock (scan): it copies a page of lines under the lock, lets go of it, tests them,
// takes the lock again and learns from the list's scan log how the indexes moved meanwhile, then
// takes its hit if the line is still there, or goes on. Writers wait for a page's copy, never for
// a match. The matches go through the store's gate, as those of waiting FINDs do (wait.go), so
// that FINDs never take every processor from the writers.
//
// While a FIND scans, the changes that move indexes are logged (scanEvent): a line added at the
// front, a line removed, the content replaced (the scan starts over). A line added at the end
// moves no index and is met by the scan when it gets there. Lines added at the front behind the
// scan are not tested: the FIND is as if it had run before them; a FIND that then waits is
// handed them to test (take), so that a waiting FIND never misses a line.

// findPage is the number of lines a FIND copies under the lock at a time: a few microseconds.
const findPage = 256

// scanEvent is a change to a list's indexes, logged while a FIND scans it.
type scanEvent struct {
	op   byte   // opFront, opRemove or opReplace
	i    int    // opRemove: the index removed
	line string // opFront: the line added
}

// logScan records a change while some FIND scans l; l must be locked.
func (l *list) logScan(e scanEvent) {
	if len(l.scanners) > 0 {
		l.scanLog = append(l.scanLog, e)
	}
}

// compactScanLog drops the events of l's scan log (l locked) that every running scan has seen:
// FINDs that overlap without end (one starts before the last ends) keep the log as long as the
// changes one scan's page can meet, not as long as every change since the first of them began.
func (l *list) compactScanLog() {
	oldest := l.scanSeen + len(l.scanLog)
	for _, seen := range l.scanners {
		oldest = min(oldest, *seen)
	}
	if drop := oldest - l.scanSeen; drop > 0 {
		// A copy, so that the dropped events (and the lines they hold) are let go of.
		l.scanLog = append([]scanEvent(nil), l.scanLog[drop:]...)
		l.scanSeen = oldest
	}
}

// scan looks for the first line of l that req.match accepts, testing lines off l's lock: l is
// locked when scan is called and when it returns, unlocked in between. It returns the index of
// the hit, or -1, and the lines added at the front while it scanned, which it did not test.
func (m *Memory) scan(l *list, req *takeRequest) (hit int, missed []string, err error) {
	seen := new(int) // the log's events this scan has seen, numbered from the list's first
	*seen = l.scanSeen + len(l.scanLog)
	l.scanners = append(l.scanners, seen)
	defer func() {
		l.scanners = slices.DeleteFunc(l.scanners, func(p *int) bool { return p == seen })
		l.compactScanLog()
	}()
	page := make([]string, 0, min(findPage, l.lines.len()))
	for next := 0; next < l.lines.len(); {
		page = page[:0]
		for line := range l.lines.from(next) {
			if page = append(page, line); len(page) == findPage {
				break
			}
		}
		base := next
		l.mu.Unlock()
		hit, tested := -1, 0
		err = m.gated(req.client, l, func() error {
			for _, line := range page { // up to the first hit, as a scan under the lock would stop
				ok, err := req.match(line)
				if err != nil {
					return err
				}
				if tested++; ok {
					hit = base + tested - 1
					return nil
				}
			}
			return nil
		})
		l.mu.Lock()
		next = base + tested
		for _, e := range l.scanLog[*seen-l.scanSeen:] {
			switch e.op {
			case opFront:
				next++
				if hit >= 0 {
					hit++
				}
				missed = append(missed, e.line)
			case opRemove:
				if e.i < next {
					next--
				}
				switch {
				case hit > e.i:
					hit--
				case hit == e.i:
					hit = -1 // another read took it: the scan goes on after it
				}
			case opReplace:
				next, hit, missed = 0, -1, nil
			}
		}
		*seen = l.scanSeen + len(l.scanLog)
		l.compactScanLog()
		if err != nil || hit >= 0 {
			return hit, missed, err
		}
	}
	return -1, missed, nil
}
