package form

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
)

// errPercent marks a malformed percent escape. The original's URLDecoder throws on one and the
// connection is dropped; we answer HTTP 400 with a KO body naming the escape instead.
var errPercent = errors.New("malformed percent escape")

// DecodePercent decodes raw request text the way the original sees it: the head's bytes are read
// as UTF-8 (one U+FFFD per malformed sequence), then Java's URLDecoder.decode(s, "UTF-8") turns
// '+' into a space and each run of %XX escapes into bytes decoded as UTF-8.
//
// It reads raw once, a character at a time, and writes one string, sized for its result: no
// copy of raw is made, whole or in characters, and the result never shares raw's memory, so a
// value a list keeps does not keep the request it came in (a 16 MiB body for a 3-byte line).
func DecodePercent(raw string) (string, error) {
	var sb strings.Builder
	// Exact when the escapes hold UTF-8 (each %XX is one byte); the builder grows otherwise.
	sb.Grow(max(len(raw)-2*strings.Count(raw, "%"), 0))
	var run escapeRun
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '+':
			sb.WriteByte(' ')
			i++
		case c == '%':
			for i < len(raw) && raw[i] == '%' {
				// Java parses the two characters with Integer.parseInt(s, i+1, i+3, 16), so a
				// sign and non-ASCII digits are accepted as long as the value is not negative.
				r1, n1 := javaChar(raw[i+1:])
				r2, n2 := javaChar(raw[i+1+n1:])
				if n1 == 0 || n2 == 0 {
					return "", fmt.Errorf("%w: incomplete trailing escape (%%) pattern", errPercent)
				}
				b, ok := hexByte(r1, r2)
				if !ok {
					return "", fmt.Errorf("%w: illegal hex characters in escape (%%) pattern %q", errPercent, "%"+string(r1)+string(r2))
				}
				run.add(&sb, b)
				i += 1 + n1 + n2
			}
			run.decode(&sb, true)
		case c < utf8.RuneSelf:
			sb.WriteByte(c)
			i++
		default:
			r, n := javaChar(raw[i:])
			sb.WriteRune(r)
			i += n
		}
	}
	return sb.String(), nil
}

// hexByte is Integer.parseInt of the two characters of a %XX escape, radix 16, when its value
// is a byte: two digits, or a sign and a digit ("-0" only, the others being negative).
func hexByte(r1, r2 rune) (byte, bool) {
	d2 := javaDigit(r2, 16)
	if d2 < 0 {
		return 0, false
	}
	switch r1 {
	case '+':
		return byte(d2), true
	case '-':
		return 0, d2 == 0
	}
	d1 := javaDigit(r1, 16)
	if d1 < 0 {
		return 0, false
	}
	return byte(d1<<4 | d2), true
}

// escapeRun collects the bytes of a run of %XX escapes and decodes them as Java's UTF-8 decoder
// does into a builder, a few at a time rather than from a copy of the whole run. A
// character, valid or malformed, spans at most utf8.UTFMax bytes, so the bytes that have that
// many after them decode as they would in the whole run.
type escapeRun struct {
	buf [256]byte
	n   int
}

func (e *escapeRun) add(sb *strings.Builder, b byte) {
	if e.n == len(e.buf) {
		e.decode(sb, false)
	}
	e.buf[e.n] = b
	e.n++
}

// decode writes the characters of the collected bytes: all of them when the run has ended
// (final), otherwise those followed by at least utf8.UTFMax-1 more bytes, the others kept.
func (e *escapeRun) decode(sb *strings.Builder, final bool) {
	p := e.buf[:e.n]
	i := 0
	for i < len(p) && (final || len(p)-i >= utf8.UTFMax) {
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			size = datafile.MalformedLength(p[i:])
		}
		sb.WriteRune(r)
		i += size
	}
	e.n = copy(e.buf[:], p[i:])
}

// javaChar returns the first character of s as Java's UTF-8 decoder reads it, and its length in
// bytes (0 for an empty s): a valid sequence, or U+FFFD for a malformed one (see datafile.MalformedLength).
func javaChar(s string) (rune, int) {
	if s == "" {
		return 0, 0
	}
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && size == 1 {
		size = datafile.MalformedLength(s)
	}
	return r, size
}

// ParseQuery adds the parameters of a query string (or of a form body, which the original parses
// the same way) to params, following NanoHTTPD's decodeParms: segments are split on '&' and
// empty ones skipped; the name is the decoded text before the first '=', trimmed; the value is
// the decoded rest, not trimmed, or "" when there is no '='; a repeated name keeps its last value.
// Segments are cut from raw without copying it; each name and value is decoded into its own
// string.
func ParseQuery(raw string, params map[string]string) error {
	return parseSegments(raw, params, false)
}

// parseSegments is ParseQuery; lenient, it skips a segment that cannot be decoded instead of
// failing (for the part of a body read to find its token).
func parseSegments(raw string, params map[string]string, lenient bool) error {
	for raw != "" {
		var segment string
		segment, raw, _ = strings.Cut(raw, "&")
		if segment == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(segment, "=")
		name, err := DecodePercent(rawName)
		if err == nil {
			var value string
			if value, err = DecodePercent(rawValue); err == nil {
				params[JavaTrim(name)] = value
				continue
			}
		}
		if !lenient {
			return err
		}
	}
	return nil
}
