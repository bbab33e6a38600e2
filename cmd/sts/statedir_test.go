package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/stsproc"
)

// A state directory that SAVE could reach (the dataset directory, even through a link) is
// refused at startup with a message, and so is a dataset directory inside the state. A state
// directory inside the dataset directory is accepted, its name there reserved.
func TestStateDirOutOfTheProtocolsReach(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(filepath.Join(data, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dataset, state, want, reserved string }{
		{data, data, "is the --dataset-dir", ""},
		{data, data + "/", "is the --dataset-dir", ""},
		{data, filepath.Join(root, "link"), "is the --dataset-dir", ""},
		{filepath.Join(root, "state", "data"), filepath.Join(root, "state"), "--dataset-dir", ""},
		{data, filepath.Join(root, "state"), "", ""},
		{data, filepath.Join(root, "data-state"), "", ""},
		{data, filepath.Join(data, "state"), "", "state"},
		{data, filepath.Join(data, "sub", "..", "state"), "", "state"},
		{filepath.Join(root, "link"), filepath.Join(data, "new", "state"), "", "new"},
	} {
		s, err := resolveSettings([]string{"--dataset-dir", c.dataset, "--state-dir", c.state}, env(nil), &strings.Builder{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("dataset %s, state %s: %v", c.dataset, c.state, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("dataset %s, state %s: %v, want an error saying %q", c.dataset, c.state, err, c.want)
		case err == nil && s.server.ReservedName != c.reserved:
			t.Errorf("dataset %s, state %s: reserved name %q, want %q", c.dataset, c.state, s.server.ReservedName, c.reserved)
		}
	}
}

// The temporary files of SAVEs interrupted by a crash are removed when the server starts, and
// the removal is logged.
func TestStartupRemovesInterruptedSaves(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(dir, ".sts-save-3k2j.tmp")
	if err := os.WriteFile(leftover, []byte("half a SAVE"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := launch(t, stsproc.FreePort(t), "--dataset-dir", dir)
	srv.WaitReady(t)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover is still there: %v", err)
	}
	if !strings.Contains(srv.Logs.String(), "Removed the temporary file of an interrupted SAVE") {
		t.Errorf("the removal is not logged:\n%s", srv.Logs)
	}
}
