package sts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// reloadServer is a server with one source of each kind, loaded at startup: the init file a.csv,
// b.txt of a load directory, and two --load files for the list c (the second gives it its lines).
func reloadServer(t *testing.T) (*testServer, string) {
	t.Helper()
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"b.txt": "b1\nb2\n", "c0": "old\n", "c1": "c1\nc2\nc3\n"})
	ts := startServer(t, func(c *Config) {
		c.InitFiles = "a.csv"
		c.LoadDirs = []LoadDir{{Dir: src, Match: `.*\.txt`}}
		c.Loads = []Load{{List: "c", Path: filepath.Join(src, "c0")}, {List: "c", Path: filepath.Join(src, "c1")}}
	})
	ts.writeFile(t, "a.csv", "a1\na2\n")
	ts.srv.LoadAtStartup(context.Background())
	return ts, src
}

// RELOAD puts every startup source's list back as its source holds it, whatever clients did to it
// (consumed, added, emptied), and leaves the lists clients made alone. It answers STATUS's rows
// for the lists it reloaded, and in JSON the digests STATUS then reports.
func TestReloadRestoresEveryStartupList(t *testing.T) {
	ts, src := reloadServer(t)
	ts.get(t, "/sts/READ?FILENAME=a.csv&KEEP=FALSE")
	ts.get(t, "/sts/ADD?FILENAME=b.txt&LINE=extra")
	ts.get(t, "/sts/RESET?FILENAME=c")
	ts.get(t, "/sts/ADD?FILENAME=mine&LINE=m")

	ts.expect(t, "/sts/RELOAD", "<html><title>OK</title>\n<body>\na.csv = 2<br />\nb.txt = 2<br />\nc = 3<br />\n</body></html>")
	ts.checkLines(t, "a.csv", "a1", "a2")
	ts.checkLines(t, "b.txt", "b1", "b2")
	ts.checkLines(t, "c", "c1", "c2", "c3")
	ts.checkLines(t, "mine", "m")

	content, err := os.ReadFile(filepath.Join(src, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256(content)
	if got := ts.listStatus(t, "c").LoadedSHA256; got != hex.EncodeToString(digest[:]) {
		t.Errorf("c's loadedSha256 after RELOAD = %q, want the digest of its source", got)
	}
	a, js := ts.getAnswer(t, "/sts/RELOAD?FORMAT=JSON")
	if a.status != http.StatusOK || !js.OK || len(js.Lists) != 3 || js.Lists[2].LoadedSHA256 != hex.EncodeToString(digest[:]) ||
		js.Total == nil || *js.Total != 7 {
		t.Errorf("RELOAD (JSON): %d %s", a.status, a.body)
	}
}

// FILENAME reloads one list only; a list no startup source gives is refused.
func TestReloadOneList(t *testing.T) {
	ts, _ := reloadServer(t)
	ts.get(t, "/sts/READ?FILENAME=a.csv&KEEP=FALSE")
	ts.get(t, "/sts/READ?FILENAME=c&KEEP=FALSE")
	ts.expect(t, "/sts/RELOAD?FILENAME=c", "<html><title>OK</title>\n<body>\nc = 3<br />\n</body></html>")
	ts.checkLines(t, "a.csv", "a2")
	ts.checkLines(t, "c", "c1", "c2", "c3")
	ts.expectKO(t, "/sts/RELOAD?FILENAME=a.csv2", http.StatusNotFound, protocol.ReasonNoSource, "a.csv2 has no startup source !")
	ts.expectKO(t, "/sts/RELOAD?FILENAME=a%0Ab", http.StatusBadRequest, protocol.ReasonInvalidParameter, "FILENAME must not hold control characters !")
}

// A source that fails leaves its list as it is; the others are reloaded all the same, and the
// KO says which failed, the JSON form with what was reloaded.
func TestReloadFailureReloadsTheOthers(t *testing.T) {
	ts, src := reloadServer(t)
	ts.get(t, "/sts/READ?FILENAME=b.txt&KEEP=FALSE")
	ts.get(t, "/sts/READ?FILENAME=c&KEEP=FALSE")
	if err := os.Remove(filepath.Join(src, "c1")); err != nil {
		t.Fatal(err)
	}
	message := "Could not reload c (" + filepath.Join(src, "c1") + "): file not found !"
	ts.expect(t, "/sts/RELOAD", koBody(message))
	ts.checkLines(t, "b.txt", "b1", "b2")
	ts.checkLines(t, "c", "c2", "c3")

	a, js := ts.getAnswer(t, "/sts/RELOAD?FORMAT=JSON")
	if a.status != http.StatusNotFound || js.OK || js.Reason != protocol.ReasonFileNotFound || js.Error != message ||
		len(js.Lists) != 2 || js.Lists[0].Name != "a.csv" || js.Lists[1].Name != "b.txt" ||
		len(js.LoadFailures) != 1 || js.LoadFailures[0].List != "c" {
		t.Errorf("RELOAD (JSON): %d %s", a.status, a.body)
	}
}

// Leases are left to run: RELOAD says how many lines they hold, and a line released after the
// reload is in the list twice (documented: the store cannot end a list's leases).
func TestReloadEndsTheListsLeases(t *testing.T) {
	ts, _ := reloadServer(t)
	id := leaseOf(t, ts.do(t, http.MethodGet, "/sts/READ?FILENAME=a.csv&LEASE=60000", "", ""), time.Minute)
	_, js := ts.getAnswer(t, "/sts/RELOAD?FILENAME=a.csv&FORMAT=JSON")
	if len(js.Lists) != 1 || js.Lists[0].Leased != 1 || js.Lists[0].Length != 2 {
		t.Fatalf("RELOAD (JSON) lists %+v, want a.csv with 2 lines and 1 lease ended", js.Lists)
	}
	ts.checkLines(t, "a.csv", "a1", "a2")
	// The line read before the reset is in the list again, once: its lease is gone.
	ts.expectKO(t, "/sts/RELEASE?LEASE="+id, http.StatusNotFound, protocol.ReasonLeaseNotFound,
		"No such lease: unknown, acknowledged, or ended too long ago !")
	ts.checkLines(t, "a.csv", "a1", "a2")
}

// RELOAD changes data: a retry with the same REQUEST_ID gets the first answer and reloads
// nothing, so that the operator may retry a reset it did not hear the answer of.
// A RELOAD with a REQUEST_ID reloads every list once: each list's outcome is its own (the
// operator's reset sends one; e2e's ResetRestoresTheLists found the second list left as it was
// when the first list's outcome answered for it), and the retry reloads none again.
func TestReloadRequestIDRunsOnce(t *testing.T) {
	ts, _ := reloadServer(t)
	ts.get(t, "/sts/READ?FILENAME=a.csv&KEEP=FALSE")
	ts.get(t, "/sts/READ?FILENAME=b.txt&KEEP=FALSE")
	first := ts.get(t, "/sts/RELOAD?REQUEST_ID=reset-1")
	ts.checkLines(t, "b.txt", "b1", "b2")
	ts.get(t, "/sts/READ?FILENAME=b.txt&KEEP=FALSE")
	ts.get(t, "/sts/READ?FILENAME=a.csv&KEEP=FALSE")
	if again := ts.get(t, "/sts/RELOAD?REQUEST_ID=reset-1"); again != first {
		t.Errorf("the retry answered %q, the first %q", again, first)
	}
	ts.checkLines(t, "a.csv", "a2")
	ts.checkLines(t, "b.txt", "b2")
}

// A server without startup sources reloads nothing, and says so with an empty OK.
func TestReloadWithoutSources(t *testing.T) {
	ts := startServer(t)
	ts.srv.LoadAtStartup(context.Background())
	ts.expect(t, "/sts/RELOAD", "<html><title>OK</title>\n<body>\n</body></html>")
}
