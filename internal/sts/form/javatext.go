package form

import (
	"strings"
	"unicode"
)

// The original reads every parameter through Java's String, URLDecoder and Integer classes.
// These helpers reproduce the few Java rules that plans can observe, so that the same bytes on
// the wire give the same parameter values here.

// JavaTrim is Java's String.trim: it strips every character up to U+0020, NUL and controls
// included, from both ends.
func JavaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// javaDigit is Java's Character.digit(char, radix) for radix ≤ 36: Unicode decimal digits (any
// script), Latin letters and their full-width forms. Java works on UTF-16 units, so a character
// outside the BMP (a surrogate pair there) is never a digit.
func javaDigit(r rune, radix int) int {
	d := -1
	switch {
	case r > 0xFFFF:
		return -1
	case r >= '0' && r <= '9':
		d = int(r - '0')
	case r >= 'a' && r <= 'z':
		d = int(r-'a') + 10
	case r >= 'A' && r <= 'Z':
		d = int(r-'A') + 10
	case r >= 'ａ' && r <= 'ｚ':
		d = int(r-'ａ') + 10
	case r >= 'Ａ' && r <= 'Ｚ':
		d = int(r-'Ａ') + 10
	case r > 0x7F && unicode.Is(unicode.Nd, r):
		d = decimalDigitValue(r)
	}
	if d >= radix {
		return -1
	}
	return d
}

// decimalDigitValue returns the value of a character of category Nd. Unicode encodes every
// script's digits as a contiguous run from 0 to 9, and the range table merges adjacent runs, so
// the offset from the range start modulo 10 is the value.
func decimalDigitValue(r rune) int {
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// ParseJavaInt is Java's Integer.parseInt(s, radix): an optional sign, at least one digit in the
// sense of javaDigit, and a value within int32.
func ParseJavaInt(s string, radix int) (int32, bool) {
	neg := false
	switch {
	case s == "":
		return 0, false
	case s[0] == '-':
		neg, s = true, s[1:]
	case s[0] == '+':
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	const limit = int64(1) << 31 // magnitude of math.MinInt32
	var v int64
	for _, r := range s {
		d := javaDigit(r, radix)
		if d < 0 {
			return 0, false
		}
		v = v*int64(radix) + int64(d)
		if v > limit {
			return 0, false
		}
	}
	if neg {
		return int32(-v), true
	}
	if v == limit {
		return 0, false
	}
	return int32(v), true
}

// JavaBoolean is Java's Boolean.valueOf(String): true only for "true" in any letter case.
func JavaBoolean(s string) bool {
	return strings.EqualFold(s, "true")
}
