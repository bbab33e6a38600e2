// Package faults is a Jepsen-style fault-injection harness for sts, run from its tests against
// real parts only: the sts binary, Debian's redis-server and redis-sentinel, and Toxiproxy run in
// the test process between sts and Redis.
//
// Clients send the protocol's commands through several sts processes, each logical operation
// with a REQUEST_ID of its own that every retry repeats, as a real client would: on a connection
// error, a timeout, any 5xx or a 409 in_progress, through the next server, with backoff, until a
// definitive answer or a give-up deadline well past the fault. Every attempt is recorded with its
// times (History). Nemeses pause, kill and fail Redis over, kill sts, and degrade the network
// between sts and Redis. Checkers then read the whole history: the total-queue check (CheckQueue:
// no line handed out twice, no acknowledged line lost, every id answered, retries answered alike),
// the RELOAD check (CheckReload) and, on short histories, a linearizability check of READ FIRST
// and ADD LAST against a FIFO queue with Porcupine (CheckFIFO).
//
// This file and the other non-test files hold what the tests and a reader of a failed history
// share; the clusters, nemeses and scenarios are in the test files. docs/guarantees.md says what
// each test checks and what the last campaign measured.
package faults
