// Package journal makes a store durable: an append-only journal of change records, periodic
// snapshots that bound it, and a lock that keeps a state directory to one server.
//
// A state directory holds
//
//	LOCK                  held with flock(2) by the server using the directory (lock.go)
//	journal-<G>.log       segment G of the journal: change records in frames (frame.go)
//	snapshot-<G>.snap     every list as it was when segment G began (snapshot.go)
//
// Records are appended in the order the store makes them and written by one goroutine, which
// takes every record appended while it was busy in one write and, with the policy Always, one
// fsync: a group commit, so that one fsync acknowledges the changes of many concurrent clients.
// When the segments written since the last snapshot pass Options.SnapshotBytes, a snapshot is
// taken in the background: new records go to a new segment G, every list is copied (one at a time,
// under its own lock) into snapshot-<G>.snap.tmp, which is synced and renamed, and the segments
// and snapshot before G are deleted. Each list in a snapshot carries the sequence number of its
// last record, so the records of segment G that the snapshot already holds are skipped on restore.
//
// Open restores the newest snapshot and replays the segments from its number on. A torn record at
// the end of the last segment, the trace of a crash in the middle of a write, is dropped (the
// segment is truncated); any other damage is a *CorruptError naming the file and the offset.
//
// Lock order: Journal.snapshotMu (one snapshot at a time) → a list's lock in the store (the
// snapshot copies the lists one at a time through State) → Journal.mu, which a store's change takes
// under its list's lock to append its record (Record) and which locks nothing else. The writer
// goroutine takes Journal.mu alone, never while it writes or syncs.
package journal
