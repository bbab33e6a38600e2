package datafile

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// A link to an existing file outside the dataset directory is never written through (it could
// lead to the journal or the lock): SAVE refuses it, and the file and the link stay as they were.
func TestSaveRefusesALinkOutTheDatasetDirectory(t *testing.T) {
	root := t.TempDir()
	dir, state := filepath.Join(root, "data"), filepath.Join(root, "state")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Mkdir(state, 0o755))
	lock := filepath.Join(state, "LOCK")
	must(t, os.WriteFile(lock, []byte("journal"), 0o600))
	must(t, os.Symlink(lock, filepath.Join(dir, "abs.csv")))
	must(t, os.Symlink(filepath.Join("..", "state", "LOCK"), filepath.Join(dir, "rel.csv")))
	must(t, os.Symlink("rel.csv", filepath.Join(dir, "chain.csv")))
	for _, name := range []string{"abs.csv", "rel.csv", "chain.csv"} {
		want := &FileError{Path: name, Reason: "Link leads outside the dataset directory", BadName: true}
		if err := Save(dir, name, []string{"x"}, Charset{}); !reflect.DeepEqual(err, want) {
			t.Errorf("Save(%q) = %#v, want %#v", name, err, want)
		}
		if info, err := os.Lstat(filepath.Join(dir, name)); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", name, err)
		}
	}
	if got, err := os.ReadFile(lock); err != nil || string(got) != "journal" {
		t.Errorf("the file outside holds %q, %v", got, err)
	}
	assertOnlyFiles(t, state, "LOCK")
}

// The temporary files of SAVEs interrupted by a crash are removed, and nothing else.
func TestRemoveSaveLeftovers(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{".sts-save-abc.tmp", ".sts-save-1.tmp", "data.csv", ".sts-save-x.csv", "x.tmp"} {
		must(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	removed, err := RemoveSaveLeftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{".sts-save-1.tmp", ".sts-save-abc.tmp"}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	assertOnlyFiles(t, dir, ".sts-save-x.csv", "data.csv", "x.tmp")
}
