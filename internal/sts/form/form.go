package form

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"unicode/utf8"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
)

// utf8Text is the charset of request targets and form bodies: the original reads them as UTF-8,
// one U+FFFD per malformed sequence, which is what the zero datafile.Charset does.
var utf8Text datafile.Charset

// ErrNoBoundary is a multipart/form-data body whose Content-Type names no boundary. Its text is
// the original's answer, to the byte, which it sends as text/plain.
var ErrNoBoundary = errors.New("BAD REQUEST: Content type is multipart/form-data but boundary missing. Usage: GET /example/file.html")

// MultipartError is a multipart/form-data body that cannot be read.
type MultipartError struct{ Err error }

func (e *MultipartError) Error() string {
	return "Malformed multipart/form-data body : " + e.Err.Error()
}

func (e *MultipartError) Unwrap() error { return e.Err }

// ParseBody adds a POST body's parameters over params. A multipart/form-data body gives one
// parameter per part; any other body, whatever its type, is trimmed and parsed like a query
// string, as the original does. The body is not copied: each parameter is its decoded value,
// in a string of its own, and what a form holds once parsed is no larger than its body (three
// times for raw bytes that are not UTF-8, each of which becomes U+FFFD). Its errors: a
// malformed percent escape (ParseQuery's), ErrNoBoundary, or a *MultipartError.
func ParseBody(contentType, body string, params map[string]string) error {
	if !isMultipart(contentType) {
		return ParseQuery(JavaTrim(body), params)
	}
	boundary, found := multipartBoundary(contentType)
	if !found {
		return ErrNoBoundary
	}
	if err := parseMultipart(body, boundary, params, false); err != nil {
		return &MultipartError{Err: err}
	}
	return nil
}

// ParseBodyPrefix adds the parameters of the first part of a form body, the fields it holds
// whole, to params; what cannot be parsed is skipped (the whole body is parsed strictly once it
// is read).
func ParseBodyPrefix(contentType, prefix string, params map[string]string) {
	if !isMultipart(contentType) {
		complete, _, _ := cutLast(strings.TrimLeftFunc(prefix, func(r rune) bool { return r <= ' ' }), "&")
		_ = parseSegments(complete, params, true)
		return
	}
	if boundary, found := multipartBoundary(contentType); found {
		_ = parseMultipart(prefix, boundary, params, true)
	}
}

// cutLast is strings.Cut at the last sep: s before and after it, or "", s when there is none.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return "", s, false
}

func isMultipart(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), "multipart/form-data")
}

// multipartBoundary returns the boundary parameter of a multipart Content-Type, which may be
// followed by others (JMeter's HC4 sampler sends "boundary=X; charset=UTF-8"). A header that mime
// cannot parse, such as one with an unquoted boundary holding '/' or '=', is read as the original
// reads every header: the boundary is the rest of it after "boundary=", unquoted.
func multipartBoundary(contentType string) (string, bool) {
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		boundary, found := params["boundary"]
		return boundary, found
	}
	_, boundary, found := strings.Cut(contentType, "boundary=")
	boundary = strings.TrimSpace(boundary)
	if unquoted, ok := strings.CutPrefix(boundary, `"`); ok {
		boundary = strings.TrimSuffix(unquoted, `"`)
	}
	return boundary, found
}

// lineBreaks removes line terminators: the original reads a part line by line and joins the
// lines without separators.
var lineBreaks = strings.NewReplacer("\r", "", "\n", "")

// parseMultipart adds one parameter per named part. Parts are read raw (no transfer decoding),
// as the original does. The body is read twice: once for the size of each named part, then to
// read each into a string of that size, copied again only when it must change (malformed UTF-8,
// line breaks). Lenient (the first part of a body), it keeps the parts read whole.
func parseMultipart(body, boundary string, params map[string]string, lenient bool) error {
	if !strings.Contains(body, "--"+boundary) {
		return errors.New("the body holds no boundary")
	}
	sizes, err := multipartSizes(body, boundary)
	if err != nil && !lenient {
		return err
	}
	mr := multipart.NewReader(strings.NewReader(body), boundary)
	copyBuf := make([]byte, 32<<10)
	for len(sizes) > 0 {
		part, err := mr.NextRawPart()
		if err != nil {
			return err // not expected: the first reading went past this part
		}
		name := part.FormName()
		if name == "" {
			continue
		}
		var sb strings.Builder
		sb.Grow(sizes[0])
		sizes = sizes[1:]
		if _, err := io.CopyBuffer(&sb, part, copyBuf); err != nil {
			return err
		}
		value := sb.String()
		if !utf8.ValidString(value) || strings.ContainsAny(value, "\r\n") {
			value = lineBreaks.Replace(utf8Text.Decode(value))
		}
		params[name] = value
	}
	return nil
}

// multipartSizes returns the content size of each named part, in order, up to the first error.
func multipartSizes(body, boundary string) ([]int, error) {
	mr := multipart.NewReader(strings.NewReader(body), boundary)
	var sizes []int
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return sizes, nil
		}
		if err != nil {
			return sizes, err
		}
		n, err := io.Copy(io.Discard, part)
		if err != nil {
			return sizes, err
		}
		if part.FormName() != "" {
			sizes = append(sizes, int(n))
		}
	}
}
