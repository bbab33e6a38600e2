package sts

import (
	"os"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// SAVE refuses to eat into the free space the journal needs (MinFreeBytes), writes nothing then,
// and saves as before when the reserve is left or the check is off.
func TestSaveLeavesTheReserveFree(t *testing.T) {
	free, err := datafile.FreeBytes(t.TempDir())
	if err != nil {
		testutil.Skip(t, "the free space of the temporary directory cannot be read: %v", err)
	}
	for _, c := range []struct {
		reserve int64
		refused bool
	}{{free + 1<<30, true}, {1, false}, {0, false}} {
		ts := startServer(t, func(cfg *Config) { cfg.MinFreeBytes = c.reserve })
		ts.loadList(t, "d.txt", "one", "two")
		// The file then holds what the list does not, so that a SAVE that wrote it shows.
		ts.writeFile(t, "d.txt", "before\n")
		got := ts.get(t, "/sts/SAVE?FILENAME=d.txt&ADD_TIMESTAMP=false")
		entries, _ := os.ReadDir(ts.dir)
		data, err := os.ReadFile(ts.dir + "/d.txt")
		if c.refused {
			if !strings.Contains(got, "Not enough free space") || !strings.Contains(got, "--min-free-bytes") {
				t.Errorf("reserve %d: SAVE answered %q, want a refusal", c.reserve, got)
			}
			if err != nil || string(data) != "before\n" {
				t.Errorf("reserve %d: the file holds %q, %v: a refused SAVE wrote it", c.reserve, data, err)
			}
			if len(entries) != 1 {
				t.Errorf("reserve %d: the dataset directory holds %d entries, want only d.txt", c.reserve, len(entries))
			}
			status, body := ts.getJSON(t, "/sts/SAVE?FILENAME=d.txt&ADD_TIMESTAMP=false", true)
			if status != 507 || body["reason"] != "limit_exceeded" {
				t.Errorf("reserve %d: the JSON form answered %d %v, want 507 limit_exceeded", c.reserve, status, body)
			}
		} else if got != okBody("2") || err != nil || string(data) != "one\ntwo\n" {
			t.Errorf("reserve %d: SAVE answered %q and the file holds %q, %v", c.reserve, got, data, err)
		}
	}
}
