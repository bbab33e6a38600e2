package sts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// request is an HTTP request as the original understands it.
type request struct {
	ctx    context.Context   // ends when the client goes away
	method string            // upper case, one of the six methods the original knows
	path   string            // percent-decoded with Java's rules ('+' is a space even here)
	params map[string]string // query parameters, with the form body's over them for POST
	body   []byte            // the raw body of a bulk load (POST /sts/LOAD), which is not a form
	json   bool              // the client opted in to the JSON form
	list   string            // FILENAME, for the commands that name a list (route.list)
	// authorized: the request carries the token, or none is needed. An unauthorized request's
	// body is read no further than authPrefixBytes, and its params hold what that part gave.
	authorized bool
	bodyLeft   bool // part of the body was not read: the connection cannot be reused
	// contentType is a POST's Content-Type header, by which LOAD tells a JSON body (loadJSON).
	contentType string
}

// knownMethods are the methods of the original; it compares them case-insensitively.
var knownMethods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodOptions}

// normalizeMethod returns the upper-case form of a method the original knows, or "".
func normalizeMethod(m string) string {
	for _, known := range knownMethods {
		if strings.EqualFold(m, known) {
			return known
		}
	}
	return ""
}

// requestError is a request that cannot be parsed; it is answered at the transport level with
// its own status rather than as a command.
type requestError struct {
	status  int
	message string
	plain   bool // answered as text/plain, as the original does, rather than as a KO body
}

// multipartNoBoundary is the original's answer to a multipart body without a boundary.
const multipartNoBoundary = "BAD REQUEST: Content type is multipart/form-data but boundary missing. Usage: GET /example/file.html"

// loadPath is the bulk-load extension, whose body is a file rather than a form.
const loadPath = protocol.CommandPrefix + protocol.CmdLoad

// authPrefixBytes is how much of a form body is read to find a TOKEN field when the request's
// head (its Authorization header, its query) carries no valid token: a request refused for its
// token costs the server its head and at most this much of its body.
const authPrefixBytes = 64 << 10

// parseRequest decodes the target and, for POST, the body. The target is taken raw from the
// request line (r.RequestURI) because the original splits it at the first '?' and decodes both
// parts itself; Go's own decoding differs ('+', invalid UTF-8). The token is checked before the
// body is read (see readPost); the caller refuses a request that is not authorized.
func (s *Server) parseRequest(w http.ResponseWriter, r *http.Request, method string) (*request, *requestError) {
	rawPath, rawQuery, _ := strings.Cut(r.RequestURI, "?")
	req := &request{ctx: r.Context(), method: method, params: make(map[string]string, 4)}
	// The original decodes the query before the path; either failure is a 400.
	if err := parseQuery(rawQuery, req.params); err != nil {
		return nil, &requestError{status: http.StatusBadRequest, message: err.Error()}
	}
	path, err := decodePercent(rawPath)
	if err != nil {
		return nil, &requestError{status: http.StatusBadRequest, message: err.Error()}
	}
	req.path = path
	req.authorized = s.authorized(r, req.params)
	if method == http.MethodPost {
		req.contentType = r.Header.Get("Content-Type")
		if err := s.readPost(w, r, req); err != nil {
			return nil, err
		}
	}
	req.json = wantsJSON(r, req.params)
	return req, nil
}

// readPost reads a POST body within Config.MaxBodyBytes: the file of a bulk load, or a form whose
// parameters go over the query's. A body announced larger than the limit is refused unread. When
// the head carries no valid token, no byte of a bulk load is read (its body is a file, not a
// form that could hold one), and of a form only its first authPrefixBytes: a TOKEN among the
// fields they hold whole lets the rest be read; otherwise the request stays unauthorized, with
// what that part gave in its params (FORMAT=JSON for the refusal's form), and the rest is left
// unread. A form read whole (the first part was all of it) is parsed, and its TOKEN checked, as
// it always was.
//
// A body read whole is held once, in a buffer of its announced size, while it is parsed; then
// its parameters are their decoded values only (see parseForm).
func (s *Server) readPost(w http.ResponseWriter, r *http.Request, req *request) *requestError {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		req.bodyLeft = true
		w.Header().Set("Connection", "close")
		return bodyTooLarge(limit)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	form := req.path != loadPath
	var prefix []byte
	if !req.authorized {
		if !form {
			req.bodyLeft = r.ContentLength != 0
			return nil
		}
		first, complete, err := readPrefix(body, r.ContentLength, authPrefixBytes)
		if err != nil {
			return s.bodyError(err)
		}
		if complete {
			if err := parseForm(r.Header.Get("Content-Type"), string(first), req.params); err != nil {
				return err
			}
			req.authorized = s.authorized(r, req.params)
			return nil
		}
		parseFormPrefix(r.Header.Get("Content-Type"), string(first), req.params)
		if req.authorized = s.authorized(r, req.params); !req.authorized {
			req.bodyLeft = true
			return nil
		}
		prefix = first
	}
	if !form {
		var buf bytes.Buffer
		if err := readRest(&buf, prefix, body, r.ContentLength); err != nil {
			return s.bodyError(err)
		}
		req.body = buf.Bytes()
		return nil
	}
	var buf strings.Builder
	if err := readRest(&buf, prefix, body, r.ContentLength); err != nil {
		return s.bodyError(err)
	}
	return parseForm(r.Header.Get("Content-Type"), buf.String(), req.params)
}

// readPrefix reads up to n bytes of a body, and says whether that was all of it.
func readPrefix(body io.Reader, contentLength int64, n int) (prefix []byte, complete bool, err error) {
	if contentLength >= 0 && contentLength <= int64(n) {
		n = int(contentLength)
	}
	buf := make([]byte, n+1) // one more byte than n tells whether there is more
	read, err := io.ReadFull(body, buf)
	switch {
	case err == nil:
		return buf, false, nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:read], true, nil
	}
	return nil, false, err
}

// readRest writes prefix, then the rest of body, to dst, which it first grows to the body's
// announced size so that the body is held in one buffer of its size (a body of unknown size,
// sent chunked, grows it as it comes).
func readRest(dst interface {
	io.Writer
	Grow(int)
}, prefix []byte, body io.Reader, contentLength int64) error {
	size := int64(len(prefix)) + 32<<10
	if contentLength >= 0 {
		size = contentLength
	}
	dst.Grow(int(size))
	_, _ = dst.Write(prefix)
	// Through a plain Writer: a bytes.Buffer reading for itself grows past the size at the end.
	_, err := io.CopyBuffer(struct{ io.Writer }{dst}, body, make([]byte, 32<<10))
	return err
}

// bodyError is the answer to a body that could not be read.
func (s *Server) bodyError(err error) *requestError {
	if tooLarge, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return bodyTooLarge(tooLarge.Limit)
	}
	return &requestError{status: http.StatusBadRequest, message: "Cannot read the request body : " + err.Error()}
}

func bodyTooLarge(limit int64) *requestError {
	return &requestError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("Request body larger than %d bytes !", limit)}
}

// parseForm adds a POST body's parameters over params. A multipart/form-data body gives one
// parameter per part; any other body, whatever its type, is trimmed and parsed like a query
// string, as the original does. The body is not copied: each parameter is its decoded value,
// in a string of its own, and what a form holds once parsed is no larger than its body (three
// times for raw bytes that are not UTF-8, each of which becomes U+FFFD).
func parseForm(contentType, body string, params map[string]string) *requestError {
	if !isMultipart(contentType) {
		err := parseQuery(javaTrim(body), params)
		if err != nil {
			return &requestError{status: http.StatusBadRequest, message: err.Error()}
		}
		return nil
	}
	boundary, found := multipartBoundary(contentType)
	if !found {
		return &requestError{status: http.StatusBadRequest, message: multipartNoBoundary, plain: true}
	}
	if err := parseMultipart(body, boundary, params, false); err != nil {
		return &requestError{status: http.StatusBadRequest, message: "Malformed multipart/form-data body : " + err.Error()}
	}
	return nil
}

// parseFormPrefix adds the parameters of the first part of a form body, the fields it holds
// whole, to params; what cannot be parsed is skipped (the whole body is parsed strictly once it
// is read).
func parseFormPrefix(contentType, prefix string, params map[string]string) {
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

// wantsJSON reports whether the client opted in to the JSON form: the parameter FORMAT=JSON, or an
// Accept header that prefers application/json to everything else it names: a q above 0 (q=0
// means "not acceptable"; no q, 1) and above that of every other media range, */* included. A
// tie keeps the original's HTML: a Header Manager recorded from a web application
// ("application/json, text/plain, */*", axios' default) must not change the answers a plan's
// extractors parse.
func wantsJSON(r *http.Request, params map[string]string) bool {
	if params["FORMAT"] == "JSON" {
		return true
	}
	jsonQ, otherQ := 0.0, 0.0
	for _, accept := range r.Header.Values("Accept") {
		for _, mediaRange := range strings.Split(accept, ",") {
			mediaType, q, ok := acceptRange(mediaRange)
			switch {
			case mediaType == "application/json" && ok:
				jsonQ = max(jsonQ, q)
			case mediaType != "application/json" && mediaType != "":
				otherQ = max(otherQ, q) // a malformed one counts in full: HTML when in doubt
			}
		}
	}
	return jsonQ > 0 && jsonQ > otherQ
}

// acceptRange reads one media range of an Accept header: its type, its q (1 when absent), and
// whether its parameters are well formed, q a number from 0 to 1.
func acceptRange(mediaRange string) (mediaType string, q float64, ok bool) {
	mediaType, params, err := mime.ParseMediaType(mediaRange)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return "", 0, false
	}
	q, ok = 1, err == nil
	if v, present := params["q"]; present {
		parsed, err := strconv.ParseFloat(v, 64)
		if err != nil || !(parsed >= 0 && parsed <= 1) {
			return mediaType, 1, false
		}
		q = parsed
	}
	return mediaType, q, ok
}
