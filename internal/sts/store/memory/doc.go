// Package memory is the default store.Store: every list in this process, each a chunked list of
// lines with an index (chunklist.go, fenwick.go) that makes reads at either end O(1) and a RANDOM
// read or a FIND's hit O(log n). A list changes only through the four primitives of list.go
// (insert, remove, keep, replace), which keep its byte count and, with a Recorder (the journal),
// write the change's record; an operation returns once its record is durable (change.go). Reads
// that wait for lines queue per list in arrival order and are served by the change that brings
// them (wait.go); leases (lease.go), REQUEST_ID outcomes (requests.go), the limits and the memory
// budget (limits.go) and the FINDs' scans and gates (scan.go) are kept beside the lists.
//
// Lock order, outermost first:
//
//	list.testing      a list's waiting FINDs' matches, run one batch at a time off list.mu (wait.go)
//	list.mu           a list's lines, waiters, leases and outcomes: every operation on one list
//	  dead letters    the mu of the list's dead-letter list (<name>.dead), taken under list.mu when
//	                  a lease's lines go there; a dead-letter list's own leases never dead-letter
//	Memory.mu         the map of lists: held only to look a list up or create it (under a list's
//	                  mu when its dead-letter list is created), and then the mu of a pending list,
//	                  which only waiting reads know and so no one holds above it
//	leaseBook.mu,     the store-wide indexes of leases and of REQUEST_ID outcomes, taken under a
//	requestBook.mu    list's mu or alone; each locks nothing else
//
// A Recorder's own lock (the journal's) comes after list.mu: a change's record is appended under
// its list's lock.
package memory
