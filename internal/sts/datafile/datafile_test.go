package datafile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestValidateName(t *testing.T) {
	tests := map[string]struct {
		name string
		want error
	}{
		"plain":               {"logins.csv", nil},
		"spaces":              {" my file.csv ", nil},
		"specials":            {"a+b;c*d?e<f", nil},
		"NUL":                 {"a\x00b", nil},
		"three dots":          {"...", nil},
		"dot dot prefix":      {"..foo", nil},
		"empty":               {"", nil},
		"non-ASCII":           {"données.csv", nil},
		"slash":               {"a/b", ErrIllegalName},
		"backslash":           {`a\b`, ErrIllegalName},
		"colon":               {"c:x", ErrIllegalName},
		"dot":                 {".", ErrIllegalName},
		"dot dot":             {"..", ErrIllegalName},
		"parent path":         {"../x", ErrIllegalName},
		"128 units":           {strings.Repeat("a", 128), nil},
		"129 units":           {strings.Repeat("a", 129), ErrNameTooLong},
		"128 two-byte runes":  {strings.Repeat("é", 128), nil},
		"64 astral runes":     {strings.Repeat("😀", 64), nil},
		"65 astral runes":     {strings.Repeat("😀", 65), ErrNameTooLong},
		"illegal before long": {strings.Repeat("a", 200) + "/", ErrIllegalName},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if err := ValidateName(tc.name); err != tc.want {
				t.Errorf("ValidateName(%q) = %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}

func TestSplitLines(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", []string{}},
		{"\n", []string{""}},
		{"\r", []string{""}},
		{"\r\n", []string{""}},
		{"one", []string{"one"}},
		{"one\r\ntwo\r\nthree", []string{"one", "two", "three"}},
		{"x\ry\rz\r", []string{"x", "y", "z"}},
		{"a\r\n\r\nb\n\nc\r", []string{"a", "", "b", "", "c"}},
		{"\n\nx\n\n", []string{"", "", "x", ""}},
		{"\n\r", []string{"", ""}},
		{"a\r\r\nb", []string{"a", "", "b"}},
		{"  padded\t \n\ttab", []string{"  padded\t ", "\ttab"}},
		{"\ufeffbom\n", []string{"\ufeffbom"}},
		{"a\u2028b\u0085c", []string{"a\u2028b\u0085c"}}, // only \r and \n end lines
	}
	for _, tc := range tests {
		if got := SplitLines(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitLines(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestReadLinesDecodes(t *testing.T) {
	tests := map[string]struct {
		content string
		charset string
		want    []string
	}{
		"UTF-8":                    {"héllo\nwörld\n", "UTF-8", []string{"héllo", "wörld"}},
		"UTF-8 BOM is kept":        {"\xef\xbb\xbfid;name\n1;a", "UTF-8", []string{"\ufeffid;name", "1;a"}},
		"Latin-1 read as UTF-8":    {"caf\xe9;na\xefve", "UTF-8", []string{"caf\uFFFD;na\uFFFDve"}},
		"Latin-1 read as Latin-1":  {"caf\xe9;na\xefve", "ISO-8859-1", []string{"café;naïve"}},
		"windows-1252 euro":        {"\x80 5\r\n", "windows-1252", []string{"€ 5"}},
		"Cp1252 alias":             {"\x80", "Cp1252", []string{"€"}},
		"windows-1252 unmapped":    {"\x81A", "windows-1252", []string{"\uFFFDA"}},
		"US-ASCII high bytes":      {"A\xc3\xa9", "US-ASCII", []string{"A\uFFFD\uFFFD"}},
		"UTF-16 BOM is consumed":   {"\xfe\xff\x00a\x00\n\x00b", "UTF-16", []string{"a", "b"}},
		"UTF-16 little-endian BOM": {"\xff\xfea\x00\r\x00", "UTF-16", []string{"a"}},
		"UTF-16LE keeps a BOM":     {"\xff\xfea\x00", "UTF-16LE", []string{"\ufeffa"}},
		// Java's replacement of malformed UTF-8, one U+FFFD per sequence.
		"truncated sequence":  {"A\xe2\x82;A", "UTF-8", []string{"A\uFFFD;A"}},
		"truncated at end":    {"\xf0\x9f\x98", "UTF-8", []string{"\uFFFD"}},
		"overlong":            {"\xc0\xaf", "UTF-8", []string{"\uFFFD\uFFFD"}},
		"overlong E0":         {"\xe0\x80AA", "UTF-8", []string{"\uFFFD\uFFFDAA"}},
		"surrogate":           {"\xed\xa0\x80", "UTF-8", []string{"\uFFFD"}},
		"surrogate prefix":    {"\xed\xa0A", "UTF-8", []string{"\uFFFDA"}},
		"above U+10FFFF":      {"\xf4\x90\x80\x80", "UTF-8", []string{"\uFFFD\uFFFD\uFFFD\uFFFD"}},
		"stray continuations": {"\x80\x80A", "UTF-8", []string{"\uFFFD\uFFFDA"}},
		"invalid lead":        {"\xffA\xf5", "UTF-8", []string{"\uFFFDA\uFFFD"}},
		"valid around errors": {"é\xe9😀\n\xe9", "UTF-8", []string{"é\uFFFD😀", "\uFFFD"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "data.csv"), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			cs, err := LookupCharset(tc.charset)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadLines(dir, "data.csv", cs, 0)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ReadLines = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestReadLinesErrors(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "adir"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644))
	must(t, os.Symlink("missing", filepath.Join(dir, "dangling")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))

	tests := map[string]struct {
		name string
		want error
	}{
		"missing":          {"nope.csv", ErrFileNotFound},
		"NUL":              {"a\x00", ErrFileNotFound},
		"case-sensitive":   {"A", ErrFileNotFound},
		"dangling symlink": {"dangling", ErrFileNotFound},
		"too long for OS":  {strings.Repeat("x", 300), ErrFileNotFound},
		"directory":        {"adir", &FileError{Path: "adir", Reason: "Is a directory", BadName: true}},
		"dataset dir":      {"", &FileError{Path: ".", Reason: "Is a directory", BadName: true}},
		"FIFO":             {"fifo", &FileError{Path: "fifo", Reason: "Not a regular file", BadName: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			lines, err := ReadLines(dir, tc.name, Charset{}, 0)
			if lines != nil || !reflect.DeepEqual(err, tc.want) {
				t.Errorf("ReadLines(%q) = %q, %v; want %v", tc.name, lines, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), dir) {
				t.Errorf("error %q shows the dataset directory", err)
			}
		})
	}
}

// The reason of a FileError is the C library's text for the error, never the
// path Go's error carries.
func TestFileErrorReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&os.PathError{Op: "open", Path: "/abs/secret.csv", Err: syscall.EACCES}, "secret.csv (Permission denied)"},
		{&os.PathError{Op: "write", Path: "/abs/secret.csv", Err: syscall.ENOSPC}, "secret.csv (No space left on device)"},
		{&os.LinkError{Op: "rename", Old: "/abs/t", New: "/abs/secret.csv", Err: syscall.EROFS}, "secret.csv (Read-only file system)"},
		{&os.PathError{Op: "read", Path: "/abs/secret.csv", Err: errors.New("odd failure")}, "secret.csv (odd failure)"},
	}
	for _, tc := range tests {
		if got := fileError("secret.csv", tc.err).Error(); got != tc.want {
			t.Errorf("fileError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestReadLinesFrom(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mounted.csv")
	must(t, os.WriteFile(path, []byte("a\r\nb"), 0o644))
	// sha256sum of the bytes "a\r\nb": the digest is of the file, not of its decoded lines.
	const digest = "18745f36a05e29072709042d6062ce54f1b08ff36c27ba80c39f81fb010c8ce2"
	if got, sum, err := ReadLinesFrom(path, Charset{}, 0); err != nil || !reflect.DeepEqual(got, []string{"a", "b"}) || sum != digest {
		t.Errorf("ReadLinesFrom = %q, %s, %v; want the lines and %s", got, sum, err, digest)
	}
	if _, _, err := ReadLinesFrom(filepath.Join(dir, "gone.csv"), Charset{}, 0); err != ErrFileNotFound {
		t.Errorf("missing file: %v, want ErrFileNotFound", err)
	}
	if _, _, err := ReadLinesFrom(dir, Charset{}, 0); !reflect.DeepEqual(err, &FileError{Path: dir, Reason: "Is a directory", BadName: true}) {
		t.Errorf("directory: %v", err)
	}
}

func TestReadLinesRefusesTooLargeFiles(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "f.csv"), []byte("0123456789"), 0o644))
	if got, err := ReadLines(dir, "f.csv", Charset{}, 10); err != nil || len(got) != 1 {
		t.Errorf("a file of the limit's size: %q, %v", got, err)
	}
	if _, err := ReadLines(dir, "f.csv", Charset{}, 9); !reflect.DeepEqual(err, &TooLargeError{Size: 10, Max: 9}) {
		t.Errorf("a file over the limit: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
