package sts

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// A link in the dataset directory leading out of it does not let a client read the file it
// leads to: INITFILE refuses it as SAVE refuses to write through it (the probe loaded a
// file from outside), at startup too (initFileAtStartup), and a link in a --load-dir leading out
// of that directory is not loaded either; STATUS says why.
func TestAdversarialInitFileRefusesALinkOut(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "token")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loadDir := t.TempDir()
	if err := os.Symlink(secret, filepath.Join(loadDir, "leak.csv")); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, func(c *Config) {
		c.InitFiles = "boot.csv"
		c.LoadDirs = []LoadDir{{Dir: loadDir, Match: `.*\.csv`}}
	})
	for _, name := range []string{"leak.csv", "boot.csv"} {
		if err := os.Symlink(secret, filepath.Join(ts.dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	ts.srv.LoadAtStartup(context.Background())

	ts.expect(t, "/sts/INITFILE?FILENAME=leak.csv", koBody("leak.csv (Link leads outside the dataset directory)"))
	if a := ts.do(t, http.MethodGet, "/sts/INITFILE?FILENAME=leak.csv&FORMAT=JSON", "", ""); a.status != http.StatusBadRequest {
		t.Errorf("INITFILE of a link out in JSON: %d, want 400", a.status)
	}
	ts.expect(t, "/sts/STATUS", koBody("Database was empty !")) // nothing was loaded
	var status protocol.Answer
	if err := json.Unmarshal([]byte(ts.do(t, http.MethodGet, "/sts/STATUS?FORMAT=JSON", "", "").body), &status); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range status.LoadFailures {
		failed = append(failed, f.List+": "+f.Error)
	}
	for _, want := range []string{"boot.csv: boot.csv (Link leads outside the dataset directory)",
		"leak.csv: " + filepath.Join(loadDir, "leak.csv") + " (Link leads outside its directory)"} {
		if !strings.Contains(strings.Join(failed, "\n"), want) {
			t.Errorf("loadFailures %q lack %q", failed, want)
		}
	}
}
