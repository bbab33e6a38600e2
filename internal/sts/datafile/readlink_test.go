package datafile

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// INITFILE reads through a link only as far as SAVE writes through one: a link leading out of
// the dataset directory (to the auth token, the journal, any file the server can read) is
// refused, whether it is absolute, relative, at the end of a chain, or dangling; links that stay
// inside are followed, into a subdirectory or through one, absolute or not. The probe read a file outside
// through a link.
func TestAdversarialReadRefusesALinkOut(t *testing.T) {
	root := t.TempDir()
	dir, secrets := filepath.Join(root, "data"), filepath.Join(root, "secrets")
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Mkdir(secrets, 0o755))
	token := filepath.Join(secrets, "token")
	must(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "inside.csv"), []byte("in\n"), 0o644))
	link := func(name, target string) { must(t, os.Symlink(target, filepath.Join(dir, name))) }
	link("abs.csv", token)
	link("rel.csv", filepath.Join("..", "secrets", "token"))
	link("chain.csv", "rel.csv")
	link("subdir", "sub")
	link("up-and-back.csv", filepath.Join("subdir", "..", "..", "secrets", "token")) // ".." of the real directory
	link("dangling.csv", filepath.Join("..", "secrets", "missing"))
	link("inside.csv", filepath.Join("sub", "inside.csv"))
	link("via-dir.csv", filepath.Join("subdir", "inside.csv"))
	link("abs-inside.csv", filepath.Join(dir, "sub", "inside.csv"))

	for _, name := range []string{"abs.csv", "rel.csv", "chain.csv", "up-and-back.csv", "dangling.csv"} {
		want := &FileError{Path: name, Reason: "Link leads outside the dataset directory", BadName: true}
		if lines, err := ReadLines(dir, name, Charset{}, 0); lines != nil || !reflect.DeepEqual(err, want) {
			t.Errorf("ReadLines(%q) = %q, %v; want %v", name, lines, err, want)
		}
		if lines, _, err := ReadLinesDigest(dir, name, Charset{}, 0); lines != nil || !reflect.DeepEqual(err, want) {
			t.Errorf("ReadLinesDigest(%q) = %q, %v; want %v", name, lines, err, want)
		}
	}
	for _, name := range []string{"inside.csv", "via-dir.csv", "abs-inside.csv"} {
		if lines, err := ReadLines(dir, name, Charset{}, 0); err != nil || !reflect.DeepEqual(lines, []string{"in"}) {
			t.Errorf("ReadLines(%q) = %q, %v; want the file inside", name, lines, err)
		}
	}
}

// A startup file (--load, a --load-dir's) is read through links that stay in its directory, as
// a mounted ConfigMap's do (key -> ..data/key -> ..<timestamp>/key), never through one that
// leads out of it: a dataset volume holding a link to the token would have it served to clients.
func TestAdversarialStartupFileRefusesALinkOut(t *testing.T) {
	root := t.TempDir()
	mount, secrets := filepath.Join(root, "datasets", "ds-logins"), filepath.Join(root, "secrets")
	must(t, os.MkdirAll(filepath.Join(mount, "..2026_12_02_12_00_00.1"), 0o755))
	must(t, os.Mkdir(secrets, 0o755))
	must(t, os.WriteFile(filepath.Join(secrets, "token"), []byte("s3cret\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(mount, "..2026_12_02_12_00_00.1", "logins.csv"), []byte("a\nb\n"), 0o644))
	must(t, os.Symlink("..2026_12_02_12_00_00.1", filepath.Join(mount, "..data")))
	must(t, os.Symlink(filepath.Join("..data", "logins.csv"), filepath.Join(mount, "logins.csv")))
	must(t, os.Symlink(filepath.Join("..", "..", "secrets", "token"), filepath.Join(mount, "token.csv")))

	if lines, _, err := ReadLinesFrom(filepath.Join(mount, "logins.csv"), Charset{}, 0); err != nil || !reflect.DeepEqual(lines, []string{"a", "b"}) {
		t.Errorf("the ConfigMap's file: %q, %v", lines, err)
	}
	path := filepath.Join(mount, "token.csv")
	want := &FileError{Path: path, Reason: "Link leads outside its directory", BadName: true}
	if lines, _, err := ReadLinesFrom(path, Charset{}, 0); lines != nil || !reflect.DeepEqual(err, want) {
		t.Errorf("a link out: %q, %v; want %v", lines, err, want)
	}
}
