package datafile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Charset is the character encoding of dataset files. The zero Charset is UTF-8.
type Charset struct {
	name string
	enc  encoding.Encoding // nil for UTF-8, which has its own fast paths
}

// Name returns the charset's preferred MIME name, such as "UTF-8" or "ISO-8859-1".
func (c Charset) Name() string {
	if c.enc == nil {
		return "UTF-8"
	}
	return c.name
}

// Encoding returns the golang.org/x/text encoding of c, unicode.UTF8 for UTF-8.
func (c Charset) Encoding() encoding.Encoding {
	if c.enc == nil {
		return unicode.UTF8
	}
	return c.enc
}

// javaAliases are Java's names for common charsets that the IANA registry
// lacks, by lower-case name.
var javaAliases = map[string]string{
	"utf8":                  "UTF-8",
	"utf16":                 "UTF-16",
	"utf_16":                "UTF-16",
	"utf_16be":              "UTF-16BE",
	"unicodebigunmarked":    "UTF-16BE",
	"utf_16le":              "UTF-16LE",
	"unicodelittleunmarked": "UTF-16LE",
	"ascii":                 "US-ASCII",
	"iso8859_1":             "ISO-8859-1",
	"iso8859-1":             "ISO-8859-1",
	"8859_1":                "ISO-8859-1",
	"iso8859_15":            "ISO-8859-15",
	"iso8859-15":            "ISO-8859-15",
	"cp1250":                "windows-1250",
	"cp1251":                "windows-1251",
	"cp1252":                "windows-1252",
	"cp1253":                "windows-1253",
	"cp1254":                "windows-1254",
	"cp1255":                "windows-1255",
	"cp1256":                "windows-1256",
	"cp1257":                "windows-1257",
	"cp1258":                "windows-1258",
	"x-macroman":            "macintosh",
	"macroman":              "macintosh",
}

// LookupCharset finds a charset by its IANA name or alias ("UTF-8",
// "ISO-8859-1", "latin1", "windows-1252", "US-ASCII", "UTF-16", ...), in any
// letter case, or by one of Java's own names ("UTF8", "Cp1252", "ISO8859_1").
func LookupCharset(name string) (Charset, error) {
	if alias, ok := javaAliases[strings.ToLower(strings.TrimSpace(name))]; ok {
		name = alias
	}
	enc, err := ianaindex.IANA.Encoding(name)
	if err != nil {
		return Charset{}, fmt.Errorf("unknown charset %q", name)
	}
	if enc == nil { // a registered name Go has no implementation for, e.g. UTF-32
		return Charset{}, fmt.Errorf("unsupported charset %q", name)
	}
	canonical, err := ianaindex.MIME.Name(enc)
	if err != nil {
		return Charset{}, fmt.Errorf("charset %q: %v", name, err)
	}
	if canonical == "UTF-8" {
		return Charset{}, nil
	}
	return Charset{name: canonical, enc: enc}, nil
}

// Decode turns bytes in c into UTF-8 text the way Java's decoders do: a byte
// order mark stays (unless the charset consumes it, as UTF-16 does) and each
// malformed sequence becomes U+FFFD. Valid UTF-8 is returned as is, without
// a copy.
func (c Charset) Decode(data string) string {
	if c.enc != nil {
		text, _ := c.enc.NewDecoder().String(data) // decoders replace, they do not fail
		return text
	}
	if utf8.ValidString(data) {
		return data
	}
	return decodeInvalidUTF8(data)
}

// decodeInvalidUTF8 replaces each malformed sequence with one U+FFFD as
// Java's UTF-8 decoder does: the longest prefix of a well-formed sequence
// counts as one ("maximal subpart"), and an encoded surrogate (ED A0-BF 80-BF)
// counts as one sequence too.
func decodeInvalidUTF8(data string) string {
	var b strings.Builder
	b.Grow(len(data) + len(data)/2)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRuneInString(data[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
			i += MalformedLength(data[i:])
			continue
		}
		b.WriteString(data[i : i+size])
		i += size
	}
	return b.String()
}

// MalformedLength is the number of bytes at the start of p, which does not
// start a valid sequence, that Java folds into one U+FFFD: the lead byte and
// the continuation bytes that still fit the sequence it announces ("maximal
// subpart"; an encoded surrogate, ED A0-BF 80-BF, is one). The protocol's
// percent-decoding follows the same rule.
func MalformedLength[T string | []byte](p T) int {
	lo, hi := byte(0x80), byte(0xBF) // allowed range of the next continuation byte
	var n int
	switch b := p[0]; {
	case b >= 0xC2 && b <= 0xDF:
		n = 2
	case b == 0xE0:
		n, lo = 3, 0xA0
	case b >= 0xE1 && b <= 0xEF: // ED too: Java reads a surrogate's three bytes as one
		n = 3
	case b == 0xF0:
		n, lo = 4, 0x90
	case b >= 0xF1 && b <= 0xF3:
		n = 4
	case b == 0xF4:
		n, hi = 4, 0x8F
	default:
		return 1
	}
	i := 1
	for ; i < n && i < len(p) && p[i] >= lo && p[i] <= hi; i++ {
		lo, hi = 0x80, 0xBF
	}
	return i
}

// NewEncoder returns a transformer from UTF-8 text to c that writes '?' for
// a character c cannot represent, as Java's encoders do. For UTF-8 it copies
// its input unchanged.
func (c Charset) NewEncoder() transform.Transformer {
	if c.enc == nil {
		return transform.Nop
	}
	return questionMarks{c.enc.NewEncoder()}
}

// questionMarks wraps an encoder so that an unrepresentable character (or
// invalid UTF-8) becomes '?' instead of an error.
type questionMarks struct{ enc *encoding.Encoder }

func (q questionMarks) Reset() { q.enc.Reset() }

func (q questionMarks) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	for {
		d, s, err := q.enc.Transform(dst[nDst:], src[nSrc:], atEOF)
		nDst, nSrc = nDst+d, nSrc+s
		var unsupported interface{ Replacement() byte } // x/text's error for a rune outside the repertoire
		if !errors.As(err, &unsupported) {
			return nDst, nSrc, err
		}
		if nDst == len(dst) {
			return nDst, nSrc, transform.ErrShortDst
		}
		dst[nDst] = '?'
		nDst++
		_, size := utf8.DecodeRune(src[nSrc:])
		nSrc += size
	}
}

// Check reports whether data is text in c: an error names the first byte that is not (a
// malformed sequence, or a NUL, which no text file holds). A charset of single bytes that maps
// every byte (ISO-8859-1) takes any data but NUL; a decoder that meets what c cannot hold gives
// U+FFFD, which is then refused.
func (c Charset) Check(data []byte) error {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("byte %d is NUL, as in a binary file", i)
	}
	if c.enc == nil {
		for i := 0; i < len(data); {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return fmt.Errorf("byte %d (0x%02X) does not belong in UTF-8", i, data[i])
			}
			i += size
		}
		return nil
	}
	text, err := c.enc.NewDecoder().Bytes(data)
	if err != nil {
		return err
	}
	if i := bytes.IndexRune(text, utf8.RuneError); i >= 0 {
		return fmt.Errorf("character %d cannot be decoded", utf8.RuneCount(text[:i]))
	}
	return nil
}
