package datafile

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzSplitLines(f *testing.F) {
	for _, seed := range []string{"", "\n", "\r", "a\r\n\r\nb\n\nc\r", "\n\nx\n\n", "x\ry\rz\r", "a\r\r\nb"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := SplitLines(text)
		for _, line := range lines {
			if strings.ContainsAny(line, "\r\n") {
				t.Fatalf("SplitLines(%q) gives line %q holding a terminator", text, line)
			}
		}
		if got := strings.Join(lines, ""); got != strings.NewReplacer("\r", "", "\n", "").Replace(text) {
			t.Fatalf("SplitLines(%q) lost or added text: %q", text, lines)
		}
		// Written back the way Save writes them, the lines split the same.
		var saved strings.Builder
		for _, line := range lines {
			saved.WriteString(line + "\n")
		}
		if again := SplitLines(saved.String()); !reflect.DeepEqual(again, lines) {
			t.Fatalf("SplitLines(%q) = %q, but after joining: %q", text, lines, again)
		}
	})
}

func FuzzReadLines(f *testing.F) {
	for _, seed := range []string{"", "a\nb", "caf\xe9;na\xefve", "\xed\xa0\x80\r\n\xf0\x9f\x98", "\xef\xbb\xbfx"} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	latin1, err := LookupCharset("ISO-8859-1")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		path := filepath.Join(dir, "data.csv")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		lines, err := ReadLines(dir, "data.csv", Charset{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range lines {
			if !utf8.ValidString(line) {
				t.Fatalf("line %q is not valid UTF-8", line)
			}
		}
		if utf8.Valid(content) && !reflect.DeepEqual(lines, SplitLines(string(content))) {
			t.Fatalf("valid UTF-8 %q read as %q", content, lines)
		}
		// Replacement never touches line ends: every charset sees the same lines.
		if inLatin1, err := ReadLines(dir, "data.csv", latin1, 0); err != nil || len(inLatin1) != len(lines) {
			t.Fatalf("%q: %d lines in UTF-8, %d in ISO-8859-1 (%v)", content, len(lines), len(inLatin1), err)
		}
	})
}
