package sts

import (
	"io"

	"golang.org/x/text/transform"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
)

// utf8Text is the charset of request targets and form bodies: the original reads them as UTF-8,
// one U+FFFD per malformed sequence, which is what the zero datafile.Charset does.
var utf8Text datafile.Charset

// isUTF8 reports whether cs is UTF-8, whose text needs no conversion.
func isUTF8(cs datafile.Charset) bool { return cs.Name() == utf8Text.Name() }

// encodeText converts UTF-8 text to cs; a character cs cannot represent becomes '?', as Java's
// String.getBytes does.
func encodeText(cs datafile.Charset, b []byte) []byte {
	if isUTF8(cs) {
		return b
	}
	out, _, err := transform.Bytes(cs.NewEncoder(), b)
	if err != nil { // the encoder replaces what it cannot encode; keep the text rather than lose it
		return b
	}
	return out
}

// encodeWriter returns a writer that converts UTF-8 text to cs on its way to w.
func encodeWriter(cs datafile.Charset, w io.Writer) io.Writer {
	if isUTF8(cs) {
		return w
	}
	return transform.NewWriter(w, cs.NewEncoder())
}
