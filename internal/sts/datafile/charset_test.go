package datafile

import (
	"fmt"
	"testing"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

func TestLookupCharset(t *testing.T) {
	tests := map[string]string{ // name -> Name()
		"UTF-8":        "UTF-8",
		"utf-8":        "UTF-8",
		"UTF8":         "UTF-8",
		"ISO-8859-1":   "ISO-8859-1",
		"latin1":       "ISO-8859-1",
		"ISO8859_1":    "ISO-8859-1",
		"windows-1252": "windows-1252",
		"Cp1252":       "windows-1252",
		"cp1250":       "windows-1250",
		"US-ASCII":     "US-ASCII",
		"ascii":        "US-ASCII",
		"UTF-16":       "UTF-16",
		"UTF-16LE":     "UTF-16LE",
		"Shift_JIS":    "Shift_JIS",
		"cp437":        "IBM437",
		"x-MacRoman":   "macintosh",
		" UTF-8 ":      "UTF-8",
	}
	for name, want := range tests {
		cs, err := LookupCharset(name)
		if err != nil || cs.Name() != want {
			t.Errorf("LookupCharset(%q) = %q, %v; want %q", name, cs.Name(), err, want)
		}
	}
	if got := (Charset{}).Name(); got != "UTF-8" {
		t.Errorf("zero Charset is %q, want UTF-8", got)
	}
	for _, name := range []string{"", "x-no-such-charset", "UTF-32", "windows-31j"} {
		if _, err := LookupCharset(name); err == nil {
			t.Errorf("LookupCharset(%q) succeeded", name)
		}
	}
}

func TestCharsetConversions(t *testing.T) {
	latin1, err := LookupCharset("latin1")
	if err != nil {
		t.Fatal(err)
	}
	if (Charset{}).Encoding() != unicode.UTF8 || latin1.Encoding() != charmap.ISO8859_1 {
		t.Errorf("Encoding() = %v, %v", (Charset{}).Encoding(), latin1.Encoding())
	}
	if got := latin1.Decode("caf\xe9"); got != "café" {
		t.Errorf("Decode = %q", got)
	}
	if got := (Charset{}).Decode("caf\xe9"); got != "caf\uFFFD" {
		t.Errorf("UTF-8 Decode = %q", got)
	}
	for cs, want := range map[Charset]string{latin1: "caf\xe9 ?", {}: "café €"} {
		if got, _, err := transform.String(cs.NewEncoder(), "café €"); err != nil || got != want {
			t.Errorf("%s: NewEncoder gives %q, %v; want %q", cs.Name(), got, err, want)
		}
	}
}

// Check tells text in the charset from bytes that are not: what the web page's upload refuses.
func TestCharsetCheck(t *testing.T) {
	for _, tc := range []struct {
		charset string
		data    string
		problem string // "" when the data is text
	}{
		{"UTF-8", "a\nétoile\n", ""},
		{"UTF-8", "ab\xffcd", "byte 2 (0xFF) does not belong in UTF-8"},
		{"UTF-8", "ab\x00", "byte 2 is NUL, as in a binary file"},
		{"ISO-8859-1", "\xe9t\xe9", ""},
		{"ISO-8859-1", "a\x00", "byte 1 is NUL, as in a binary file"},
		{"US-ASCII", "abc\xe9", "character 3 cannot be decoded"},
	} {
		cs, err := LookupCharset(tc.charset)
		if err != nil {
			t.Fatal(err)
		}
		err = cs.Check([]byte(tc.data))
		if got := fmt.Sprint(err); tc.problem == "" && err != nil || tc.problem != "" && got != tc.problem {
			t.Errorf("%s Check(%q) = %v, want %q", tc.charset, tc.data, err, tc.problem)
		}
	}
}
