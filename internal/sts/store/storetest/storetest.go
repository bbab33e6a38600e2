// Package storetest is the conformance suite of store.Store: the behaviour the protocol layer
// counts on, checked through the interface only, so that every backend answers a client alike. A
// backend's tests call Run with a Factory, and RunShared when several store values can share one
// backend, as table servers share a Redis.
//
// The suite asks nothing of how a backend is built: no test looks behind the interface, depends
// on which indexes Random draws, or on the order in which waiting reads are served. Limits are
// checked for MaxLinesPerList and MaxLineBytes; MaxTotalBytes is the memory backend's own.
// Beyond store.Store's comments, the suite assumes two things, since it makes a change as soon as
// it sees a read wait:
//   - Waiting counts a read only once a change made after that would wake it;
//   - the stores of a SharedFactory pair are ready when it returns them: a change through either
//     wakes the reads waiting on the other.
//
// Every wait has a generous bound (a slow CI machine, a backend across the network), and the
// statistical tests fail a correct backend with a probability below 1e-9.
package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Factory makes a fresh, empty store with the given limits for one test, and registers its own
// cleanup with t.Cleanup.
type Factory func(t testing.TB, limits store.Limits) store.Store

// SharedFactory makes two fresh store values over one fresh, empty backend, as two table servers
// sharing it would hold, and registers their cleanup with t.Cleanup. A backend that lives in
// one process may return the same value twice.
type SharedFactory func(t testing.TB, limits store.Limits) (a, b store.Store)

// test is a conformance test that needs one store, or stores with limits.
type test struct {
	name string
	run  func(t *testing.T, newStore Factory)
}

// pairTest is a conformance test of behaviour that must hold across the stores sharing a
// backend: it reads through a and changes through b, or uses both at once. Run gives it the same
// store twice.
type pairTest struct {
	name string
	run  func(t *testing.T, a, b store.Store)
}

var tests = []test{
	{"Read", testRead},
	{"ReadRandom", testReadRandom},
	{"ReadRefusesBadArguments", testReadRefusesBadArguments},
	{"ReadLastKeepReturnsTheSameLineForever", testReadLastKeepReturnsTheSameLineForever},
	{"ReadFirstKeepRotatesALongList", testReadFirstKeepRotatesALongList},
	{"RandomReadOfTheWholeListIsAShuffle", testRandomReadOfTheWholeListIsAShuffle},
	{"RandomReadsAreUniform", testRandomReadsAreUniform},
	{"RandomReadMultiPicksOneAfterTheOther", testRandomReadMultiPicksOneAfterTheOther},
	{"Find", testFind},
	{"Add", testAdd},
	{"AddRefusesRandomButCreatesTheList", testAddRefusesRandomButCreatesTheList},
	{"InsertIsOneChange", testInsertIsOneChange},
	{"InsertRefusesRandom", testInsertRefusesRandom},
	{"UniqueAddFollowsEveryChange", testUniqueAddFollowsEveryChange},
	{"ReplaceCreatesOrReplaces", testReplaceCreatesOrReplaces},
	{"ReplaceRecordsTheDigest", testReplaceRecordsTheDigest},
	{"LoadOnce", testLoadOnce},
	{"LinesReturnsACopy", testLinesReturnsACopy},
	{"PageReadsWithoutChanging", testPageReadsWithoutChanging},
	{"ResetEmptiesButNeverCreates", testResetEmptiesButNeverCreates},
	{"Ensure", testEnsure},
	{"Length", testLength},
	{"ListsAreSortedByBytes", testListsAreSortedByBytes},
	{"KeysAreNeverDeleted", testKeysAreNeverDeleted},
	{"MaxLinesPerList", testMaxLinesPerList},
	{"MaxLineBytes", testMaxLineBytes},
	{"MaxLists", testMaxLists},
	{"WaitEndsWithTheErrorOfThen", testWaitEndsWithTheErrorOfThen},
	{"WaitEndsWithTheContext", testWaitEndsWithTheContext},
	{"EndWaits", testEndWaits},
	{"WaitingCountsWaitingReads", testWaitingCountsWaitingReads},
	{"ReadLeasedHoldsLinesUntilAck", testReadLeasedHoldsLinesUntilAck},
	{"ReadLeasedFailsAsReadDoes", testReadLeasedFailsAsReadDoes},
	{"FindLeased", testFindLeased},
	{"ReleaseGivesLinesBack", testReleaseGivesLinesBack},
	{"AckAndReleaseByLine", testAckAndReleaseByLine},
	{"ExpiryGivesLinesBackOnce", testExpiryGivesLinesBackOnce},
	{"ExtendKeepsALeaseRunning", testExtendKeepsALeaseRunning},
	{"DeadLetterAfterMaxDeliveries", testDeadLetterAfterMaxDeliveries},
	{"DeadLetterListsCountAgainstMaxLists", testDeadLetterListsCountAgainstMaxLists},
	{"LeasedLinesStayUnique", testLeasedLinesStayUnique},
	{"LeasesOutliveReset", testLeasesOutliveReset},
	{"ReloadEndsTheLeases", testReloadEndsTheLeases},
	{"FailedChangesRecordNothing", testFailedChangesRecordNothing},
	{"RequestOutcomesEndWithTheirWindow", testRequestOutcomesEndWithTheirWindow},
	{"LeaseLimitsCountLeasedLines", testLeaseLimitsCountLeasedLines},
	{"ReturnsGoWithTheirLines", testReturnsGoWithTheirLines},
}

var pairTests = []pairTest{
	{"ChangesAreSeenThroughEveryStore", testChangesAreSeenThroughEveryStore},
	{"WaitingReadIsWokenByAdd", testWaitingReadIsWokenByAdd},
	{"WaitingReadsOfEachKind", testWaitingReadsOfEachKind},
	{"WaitingReadIsWokenByReplaceAndLoadOnce", testWaitingReadIsWokenByReplaceAndLoadOnce},
	{"WaitForAListNotCreatedYet", testWaitForAListNotCreatedYet},
	{"MatchErrorEndsAWaitingFind", testMatchErrorEndsAWaitingFind},
	{"WaitingFindDoesNotHoldUpChanges", testWaitingFindDoesNotHoldUpChanges},
	{"ConsumersTakeEveryLineOnce", testConsumersTakeEveryLineOnce},
	{"UniqueAddsAcceptEachLineOnce", testUniqueAddsAcceptEachLineOnce},
	{"ConcurrentListsAreIndependent", testConcurrentListsAreIndependent},
	{"LoadOnceLoadsOnce", testLoadOnceLoadsOnce},
	{"LeasesAreSharedByEveryStore", testLeasesAreSharedByEveryStore},
	{"LeasedConsumersLoseNothing", testLeasedConsumersLoseNothing},
	{"RequestsAreBoundToOneFingerprint", testRequestsAreBoundToOneFingerprint},
	{"RetriedChangesAreMadeOnce", testRetriedChangesAreMadeOnce},
	{"RetriedLeaseChangesAreMadeOnce", testRetriedLeaseChangesAreMadeOnce},
	{"ConcurrentRetriesTakeOneLine", testConcurrentRetriesTakeOneLine},
}

// Run runs every conformance test as a subtest of t, each on a store of its own from newStore.
func Run(t *testing.T, newStore Factory) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore) })
	}
	for _, tc := range pairTests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, store.Limits{})
			tc.run(t, s, s)
		})
	}
}

// RunShared runs, as subtests of t, the conformance tests of what stores sharing a backend must
// agree on: a read waiting on one is woken by a change made through the other, lines are
// consumed once and unique lines added once across both, and LoadOnce loads once for both.
func RunShared(t *testing.T, newPair SharedFactory) {
	for _, tc := range pairTests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newPair(t, store.Limits{})
			tc.run(t, a, b)
		})
	}
}

var months = []string{"Jan", "Feb", "Mar", "Apr", "May", "June"}

// patience bounds every wait for something that must happen: long enough for a slow machine or a
// backend across the network, and far shorter than the minute that waiting reads ask for.
const patience = 10 * time.Second

// fill replaces list name of s with a copy of lines (Replace takes ownership of its slice);
// nil lines leave s without the list.
func fill(t testing.TB, s store.Store, name string, lines []string) {
	t.Helper()
	if lines == nil {
		return
	}
	if err := s.Replace(t.Context(), name, slices.Clone(lines), ""); err != nil {
		t.Fatalf("Replace(%q): %v", name, err)
	}
}

// numbered returns n distinct lines in order.
func numbered(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line-%07d", i)
	}
	return lines
}

// checkErr compares err with want: a sentinel by errors.Is, a *ShortListError by value.
func checkErr(t testing.TB, err, want error) {
	t.Helper()
	var short, wantShort *store.ShortListError
	switch {
	case errors.As(want, &wantShort):
		if !errors.As(err, &short) || *short != *wantShort {
			t.Fatalf("error = %v, want %v", err, want)
		}
	case !errors.Is(err, want):
		t.Fatalf("error = %v, want %v", err, want)
	}
}

// checkLines fails unless list name of s holds exactly want.
func checkLines(t testing.TB, s store.Store, name string, want []string) {
	t.Helper()
	got, err := s.Lines(t.Context(), name)
	if err != nil {
		t.Fatalf("Lines(%q): %v", name, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("list %q = %q, want %q", name, got, want)
	}
}

// checkNotLoaded fails unless s has no list called name.
func checkNotLoaded(t testing.TB, s store.Store, name string) {
	t.Helper()
	if n, err := s.Length(t.Context(), name); !errors.Is(err, store.ErrNotLoaded) {
		t.Fatalf("Length(%q) = %d, %v; want ErrNotLoaded", name, n, err)
	}
}

// lists is s.Lists, failing the test on an error.
func lists(t testing.TB, s store.Store) []store.ListInfo {
	t.Helper()
	infos, err := s.Lists(t.Context())
	if err != nil {
		t.Fatalf("Lists: %v", err)
	}
	return infos
}

// infoOf is what Lists reports of list name.
func infoOf(t testing.TB, s store.Store, name string) store.ListInfo {
	t.Helper()
	for _, info := range lists(t, s) {
		if info.Name == name {
			return info
		}
	}
	t.Fatalf("Lists has no %q", name)
	return store.ListInfo{}
}

// must fails the test on an error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
