package form

import (
	"errors"
	"maps"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodePercent(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"plain":                      {"READ", "READ"},
		"plus is a space":            {"a+b", "a b"},
		"escaped plus":               {"a%2Bb", "a+b"},
		"escaped letter":             {"%52EAD", "READ"},
		"utf-8 escapes":              {"caf%C3%A9", "café"},
		"raw utf-8":                  {"café", "café"},
		"invalid byte":               {"caf%E9", "caf\uFFFD"},
		"truncated sequence":         {"%C3x", "\uFFFDx"},
		"nul kept":                   {"a%00b", "a\x00b"},
		"hash is data":               {"a#b", "a#b"},
		"raw invalid byte":           {"a\xffb", "a\uFFFDb"},
		"each malformed sequence":    {"%E2%82%41%FF", "\uFFFDA\uFFFD"},
		"encoded surrogate is one":   {"%ED%A0%80", "\uFFFD"},
		"overlong is per byte":       {"%C0%AF", "\uFFFD\uFFFD"},
		"escape runs decode apart":   {"%C3" + "\xa9", "\uFFFD\uFFFD"},
		"java parses a signed digit": {"%+1", "\x01"},
		"minus zero is zero":         {"%-0", "\x00"},
		"unicode digits are hex":     {"%٤١", "A"},
		"full-width hex letter":      {"%４Ｆ", "O"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := DecodePercent(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("DecodePercent(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestDecodePercentMalformed(t *testing.T) {
	for _, in := range []string{"%zz", "a%", "%4", "abc%4", "%-1", "%G0", "%%41", "x%😀"} {
		if got, err := DecodePercent(in); !errors.Is(err, errPercent) {
			t.Errorf("DecodePercent(%q) = %q, %v; want a malformed escape error", in, got, err)
		}
	}
}

func TestParseQuery(t *testing.T) {
	tests := map[string]struct {
		in   string
		want map[string]string
	}{
		"simple":                 {"FILENAME=a.csv&KEEP=FALSE", map[string]string{"FILENAME": "a.csv", "KEEP": "FALSE"}},
		"empty segments skipped": {"&&A=1&&", map[string]string{"A": "1"}},
		"name trimmed":           {"%20KEEP%20=FALSE", map[string]string{"KEEP": "FALSE"}},
		"name trimmed of nul":    {"%00KEEP=FALSE", map[string]string{"KEEP": "FALSE"}},
		"value not trimmed":      {"LINE=%20x%20", map[string]string{"LINE": " x "}},
		"no equals is empty":     {"KEEP&LINE", map[string]string{"KEEP": "", "LINE": ""}},
		"empty value":            {"KEEP=", map[string]string{"KEEP": ""}},
		"last repeated wins":     {"A=1&A=2&A=3", map[string]string{"A": "3"}},
		"first equals splits":    {"LINE=a=b", map[string]string{"LINE": "a=b"}},
		"names case-sensitive":   {"filename=x&FILENAME=y", map[string]string{"filename": "x", "FILENAME": "y"}},
		"plus in value":          {"NB_LINES=+2", map[string]string{"NB_LINES": " 2"}},
		"empty name":             {"=x", map[string]string{"": "x"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := map[string]string{}
			if err := ParseQuery(tt.in, got); err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("ParseQuery(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseJavaInt(t *testing.T) {
	good := map[string]int32{"2": 2, "+2": 2, "0002": 2, "-0": 0, "٣": 3, "２": 2,
		"2147483647": 2147483647, "-2147483648": -2147483648}
	for in, want := range good {
		if got, ok := ParseJavaInt(in, 10); !ok || got != want {
			t.Errorf("ParseJavaInt(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "+", "-", " 2", "2 ", "2.0", "1e3", "0x10", "99999999999", "2147483648", "-2147483649", "𝟐", "a"} {
		if got, ok := ParseJavaInt(in, 10); ok {
			t.Errorf("ParseJavaInt(%q) = %d; want a failure", in, got)
		}
	}
}

func TestJavaBoolean(t *testing.T) {
	for in, want := range map[string]bool{"true": true, "TRUE": true, "True": true, "tRuE": true,
		"FALSE": false, "yes": false, "1": false, "": false, " true": false} {
		if got := JavaBoolean(in); got != want {
			t.Errorf("JavaBoolean(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzParseQuery checks the decoder on any input: it never panics, every name and value is
// valid UTF-8, names are trimmed, and a query built by a standard encoder decodes back.
func FuzzParseQuery(f *testing.F) {
	for _, seed := range []string{"FILENAME=a.csv&KEEP=FALSE", "%20KEEP%20=x", "a%zz", "%C3x&%E9=%00", "&&=&", "%+1%-0", "LINE=%F0%90%80"} {
		f.Add(seed, "name", "value")
	}
	f.Fuzz(func(t *testing.T, query, name, value string) {
		got := map[string]string{}
		if err := ParseQuery(query, got); err == nil {
			for k, v := range got {
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					t.Fatalf("ParseQuery(%q) gave invalid UTF-8 %q=%q", query, k, v)
				}
				if k != JavaTrim(k) {
					t.Fatalf("ParseQuery(%q) gave an untrimmed name %q", query, k)
				}
			}
		}
		name, value = strings.ToValidUTF8(name, "?"), strings.ToValidUTF8(value, "?")
		encoded := "A=1&" + url.QueryEscape(name) + "=" + url.QueryEscape(value)
		back := map[string]string{}
		if err := ParseQuery(encoded, back); err != nil {
			t.Fatalf("ParseQuery(%q): %v", encoded, err)
		}
		want := map[string]string{"A": "1"}
		want[JavaTrim(name)] = value
		if !maps.Equal(back, want) {
			t.Fatalf("ParseQuery(%q) = %q, want %q", encoded, back, want)
		}
	})
}
