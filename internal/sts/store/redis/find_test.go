package redis

import (
	"fmt"
	"testing"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// A FIND whose hits were consumed while it scanned offers its next take more of them: readers
// taking the first lines faster than one a round trip left a FIND that offered one hit a take
// behind them, a take for every line they had consumed (it walked a whole list of 20 000 lines,
// 7 847 takes, and answered "Not find !" after seconds). Here the first test of a line lets a
// reader through another store consume the 2 000 first lines, the scan's first page among them:
// the FIND must find the lines of its page gone in a few takes, not one take a line.
func TestAFindBehindConsumersCatchesUp(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	prefix := newPrefix()
	finder, reader := open(t, Connection{URL: srv.URL()}, prefix, store.Limits{}), open(t, Connection{URL: srv.URL()}, prefix, store.Limits{})
	content := make([]string, 20000)
	for i := range content {
		content[i] = fmt.Sprintf("line-%05d", i)
	}
	if err := finder.Replace(ctx, "d", content, ""); err != nil {
		t.Fatal(err)
	}
	consumed := false
	behind := func(string) (bool, error) {
		if !consumed {
			consumed = true
			if _, err := reader.Read(ctx, "d", store.First, 2000, false, 0); err != nil {
				return false, err
			}
			srv.CommandStats(t) // from here on, the FIND's own commands
		}
		return true, nil
	}
	got, err := finder.Find(ctx, "d", behind, false, 0)
	if err != nil || got < content[2000] {
		t.Fatalf("FIND: %q, %v; want a line the reader left", got, err)
	}
	scripts := srv.CommandStats(t)["evalsha"].Calls
	t.Logf("the FIND took %s after %d scripts", got, scripts)
	if scripts > 16 {
		t.Errorf("the FIND sent %d scripts to find the %d lines of its first page gone, one take a line", scripts, firstPage)
	}
}
