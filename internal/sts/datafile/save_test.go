package datafile

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSaveWritesBytes(t *testing.T) {
	tests := map[string]struct {
		lines   []string
		charset string
		want    string
	}{
		"UTF-8":                    {[]string{"café", "", "x"}, "UTF-8", "café\n\nx\n"},
		"no lines":                 {[]string{}, "UTF-8", ""},
		"one empty line":           {[]string{""}, "UTF-8", "\n"},
		"line holding a newline":   {[]string{"a\nb"}, "UTF-8", "a\nb\n"},
		"invalid UTF-8 kept as is": {[]string{"a\xffb"}, "UTF-8", "a\xffb\n"},
		"ISO-8859-1":               {[]string{"café"}, "ISO-8859-1", "caf\xe9\n"},
		"unmappable becomes ?":     {[]string{"5 €", "日本"}, "ISO-8859-1", "5 ?\n??\n"},
		"windows-1252":             {[]string{"5 €"}, "windows-1252", "5 \x80\n"},
		"US-ASCII":                 {[]string{"né"}, "US-ASCII", "n?\n"},
		"UTF-16 writes one BOM":    {[]string{"a", "b"}, "UTF-16", "\xfe\xff\x00a\x00\n\x00b\x00\n"},
		"UTF-16LE":                 {[]string{"a"}, "UTF-16LE", "a\x00\n\x00"},
		"Shift_JIS":                {[]string{"日本", "€"}, "Shift_JIS", "\x93\xfa\x96\x7b\n?\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cs, err := LookupCharset(tc.charset)
			must(t, err)
			must(t, Save(dir, "out.csv", tc.lines, cs))
			got, err := os.ReadFile(filepath.Join(dir, "out.csv"))
			if err != nil || string(got) != tc.want {
				t.Errorf("file holds %q, %v; want %q", got, err, tc.want)
			}
			assertOnlyFiles(t, dir, "out.csv")
		})
	}
}

func TestSaveRoundTrips(t *testing.T) {
	lines := []string{"id;name", "1;Zoë", "", "  spaced  ", "2;naïve € ÿ", "last"}
	for _, charset := range []string{"UTF-8", "ISO-8859-15", "windows-1252", "UTF-16", "UTF-16BE", "UTF-16LE"} {
		t.Run(charset, func(t *testing.T) {
			dir := t.TempDir()
			cs, err := LookupCharset(charset)
			must(t, err)
			must(t, Save(dir, "data.csv", lines, cs))
			got, err := ReadLines(dir, "data.csv", cs, 0)
			if err != nil || !reflect.DeepEqual(got, lines) {
				t.Errorf("read back %q, %v; want %q", got, err, lines)
			}
		})
	}
}

func TestSaveReplacesAndKeepsPermissions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret.csv")
	must(t, os.WriteFile(path, []byte("old\n"), 0o600))
	must(t, Save(dir, "secret.csv", []string{"new"}, Charset{}))
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new\n" {
		t.Errorf("file holds %q, %v", got, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600 kept", info.Mode(), err)
	}
	assertOnlyFiles(t, dir, "secret.csv")
}

func TestSaveWritesThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "data"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "data", "real.csv"), []byte("old\n"), 0o644))
	must(t, os.Symlink(filepath.Join("data", "real.csv"), filepath.Join(dir, "link.csv")))
	must(t, Save(dir, "link.csv", []string{"new"}, Charset{}))
	if target, err := os.Readlink(filepath.Join(dir, "link.csv")); err != nil || target != filepath.Join("data", "real.csv") {
		t.Errorf("the link now points to %q, %v", target, err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "data", "real.csv")); err != nil || string(got) != "new\n" {
		t.Errorf("link target holds %q, %v", got, err)
	}
	assertOnlyFiles(t, filepath.Join(dir, "data"), "real.csv")
}

func TestSaveThroughDanglingLinks(t *testing.T) {
	root := t.TempDir()
	dir, outside := filepath.Join(root, "data"), filepath.Join(root, "elsewhere")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Mkdir(outside, 0o755))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	link := func(name, target string) { must(t, os.Symlink(target, filepath.Join(dir, name))) }
	link("new.csv", filepath.Join("sub", "made.csv"))
	link("subdir", "sub")
	link("via-dir.csv", filepath.Join("subdir", "..", "top.csv")) // ".." of the real directory
	link("out.csv", filepath.Join(outside, "x.csv"))
	link("up.csv", filepath.Join("..", "elsewhere", "y.csv"))
	link("loop1.csv", "loop2.csv")
	link("loop2.csv", "loop1.csv")

	for name, want := range map[string]string{"new.csv": "sub/made.csv", "via-dir.csv": "top.csv"} {
		must(t, Save(dir, name, []string{name}, Charset{}))
		if got, err := os.ReadFile(filepath.Join(dir, want)); err != nil || string(got) != name+"\n" {
			t.Errorf("Save(%q) wrote %q to %s, %v", name, got, want, err)
		}
	}
	for name, want := range map[string]*FileError{
		"out.csv":   {Path: "out.csv", Reason: "Dangling link leads outside the dataset directory", BadName: true},
		"up.csv":    {Path: "up.csv", Reason: "Dangling link leads outside the dataset directory", BadName: true},
		"loop1.csv": {Path: "loop1.csv", Reason: "Too many levels of symbolic links", BadName: true},
	} {
		if err := Save(dir, name, []string{"x"}, Charset{}); !reflect.DeepEqual(err, want) {
			t.Errorf("Save(%q) = %#v, want %#v", name, err, want)
		}
	}
	assertOnlyFiles(t, outside)
	for _, name := range []string{"new.csv", "via-dir.csv", "out.csv"} {
		if info, err := os.Lstat(filepath.Join(dir, name)); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", name, err)
		}
	}
}

func TestSaveRefuses(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "adir"), 0o755))
	tests := map[string]struct {
		name string
		want error
	}{
		"a directory":     {"adir", &FileError{Path: "adir", Reason: "Is a directory", BadName: true}},
		"the dataset dir": {"", &FileError{Path: ".", Reason: "Is a directory", BadName: true}},
		"NUL":             {"a\x00b", ErrInvalidPath},
		"name too long":   {strings.Repeat("x", 300), &FileError{Path: strings.Repeat("x", 300), Reason: "File name too long", BadName: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := Save(dir, tc.name, []string{"x"}, Charset{})
			if !reflect.DeepEqual(err, tc.want) {
				t.Errorf("Save(%q) = %v, want %v", tc.name, err, tc.want)
			}
			assertOnlyFiles(t, dir, "adir")
		})
	}
}

func TestSaveIntoMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	err := Save(dir, "out.csv", []string{"x"}, Charset{})
	if want := (&FileError{Path: "out.csv", Reason: "No such file or directory"}); !reflect.DeepEqual(err, want) {
		t.Errorf("Save = %v, want %v", err, want)
	}
}

func TestTimestampedName(t *testing.T) {
	at := time.Date(2026, 11, 29, 22, 51, 35, 999_000_000, time.Local)
	tests := map[string]string{
		"logins.csv": "20261129T22h51m35s.logins.csv",
		"":           "20261129T22h51m35s.",
		"a.b.c":      "20261129T22h51m35s.a.b.c",
	}
	for name, want := range tests {
		if got := TimestampedName(at, name); got != want {
			t.Errorf("TimestampedName(%q) = %q, want %q", name, got, want)
		}
	}
	// Another zone is shown in local time.
	if got, want := TimestampedName(at.UTC(), "x"), TimestampedName(at, "x"); got != want {
		t.Errorf("UTC time gives %q, want local %q", got, want)
	}
}

// assertOnlyFiles fails unless dir holds exactly names: no temporary file
// survives a save.
func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, names) {
		t.Errorf("%s holds %q, want %q", dir, got, names)
	}
}
