package javaregex

import (
	"errors"
	"testing"
	"time"
)

// FuzzCompile checks that no pattern makes Compile or a match panic or hang,
// that a match ends with an answer or one of the documented errors, and that a
// whole-string match is also found by Find.
func FuzzCompile(f *testing.F) {
	for _, c := range javaCases {
		f.Add(c.pattern, c.input)
	}
	for _, p := range javaRejects {
		f.Add(p, "")
	}
	f.Fuzz(func(t *testing.T, pattern, input string) {
		re, err := Compile(pattern, 20*time.Millisecond)
		if err != nil {
			if !errors.Is(err, errSyntax) && !errors.Is(err, ErrTooLong) && !errors.Is(err, ErrTooCostly) {
				t.Fatalf("Compile(%q) = %v, not a documented error", pattern, err)
			}
			return
		}
		matched, err := re.Match(input)
		if !matchErrorOK(err) {
			t.Fatalf("Match(%q, %q): %v", pattern, input, err)
		}
		found, err := re.Find(input)
		if !matchErrorOK(err) {
			t.Fatalf("Find(%q, %q): %v", pattern, input, err)
		}
		if matched && err == nil && !found {
			t.Fatalf("%q matches all of %q but Find does not find it", pattern, input)
		}
	})
}

func matchErrorOK(err error) bool {
	return err == nil || errors.Is(err, ErrTimeout) || errors.Is(err, ErrTooComplex)
}
