package sts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// The exact form of EXPORT and LOAD. The plain form is the original's file format, one line per
// text line, so a line holding CR or LF comes back from a plain EXPORT→LOAD as several lines. In
// the JSON form a list is a JSON array of strings, one per line, and any line goes through
// unchanged: CR, LF, NUL, backslashes, any Unicode text.

// isJSONBody reports whether a LOAD body is JSON by its Content-Type: application/json, with any
// parameters, in any case.
func isJSONBody(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "application/json")
}

// jsonLines decodes a LOAD body sent as JSON: one array of strings, each a line, in UTF-8 (JSON
// knows no other charset, so --charset-read does not apply and a charset parameter other than
// UTF-8 is refused). Anything else is a KO that says what is wrong and where, and loads nothing.
func jsonLines(contentType string, body []byte) ([]string, *reply) {
	fail := func(format string, args ...any) ([]string, *reply) {
		rep := ko(protocol.CmdLoad, http.StatusBadRequest, protocol.ReasonInvalidBody, fmt.Sprintf(format, args...))
		return nil, &rep
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if cs, present := params["charset"]; present && !strings.EqualFold(cs, "UTF-8") && !strings.EqualFold(cs, "UTF8") {
			return fail("A JSON body is UTF-8, not charset=%s !", cs)
		}
	}
	if !utf8.Valid(body) {
		return fail("JSON body is not valid UTF-8 (at byte %d) !", invalidUTF8At(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // a number is refused as such, never as out of range
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return fail("JSON body is empty: it must be an array of strings ([] for no line) !")
	case err != nil:
		return fail("Invalid JSON body: %s !", jsonError(err, dec))
	case tok != json.Delim('['):
		return fail("JSON body must be an array of strings, not %s !", jsonKind(tok))
	}
	lines := []string{}
	for dec.More() {
		at := valueStart(body, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return fail("Invalid JSON body: %s !", jsonError(err, dec))
		}
		line, isString := tok.(string)
		if !isString {
			return fail("JSON body must be an array of strings: element %d (byte %d) is %s !", len(lines), at, jsonKind(tok))
		}
		lines = append(lines, line)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return fail("Invalid JSON body: %s !", jsonError(err, dec))
	}
	end := dec.InputOffset()
	if rest := bytes.TrimLeft(body[end:], " \t\r\n"); len(rest) > 0 {
		return fail("JSON body must be one array of strings: something follows it at byte %d !", len(body)-len(rest))
	}
	return lines, nil
}

// valueStart is the offset of the next JSON value in body from offset at, past white space and a
// separating comma. Offsets in a KO count bytes from 0, as json.SyntaxError's do.
func valueStart(body []byte, at int64) int64 {
	for at < int64(len(body)) && strings.IndexByte(" \t\r\n,", body[at]) >= 0 {
		at++
	}
	return at
}

// jsonKind names the JSON value a token starts, for a KO.
func jsonKind(tok json.Token) string {
	switch tok {
	case json.Delim('{'):
		return "an object"
	case json.Delim('['):
		return "an array"
	case nil:
		return "null"
	}
	switch tok.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%v", tok)
}

// jsonError is a decoding error in words, with the byte where it was found.
func jsonError(err error, dec *json.Decoder) string {
	if syntax, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Sprintf("%s at byte %d", syntax.Error(), syntax.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Sprintf("it ends at byte %d, inside the array", dec.InputOffset())
	}
	return err.Error()
}

// invalidUTF8At is the offset of the first byte of b that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}
