package sts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/sts-operator/sts-operator/internal/sts/form"
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
	if err := form.ParseQuery(rawQuery, req.params); err != nil {
		return nil, &requestError{status: http.StatusBadRequest, message: err.Error()}
	}
	path, err := form.DecodePercent(rawPath)
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
	isForm := req.path != loadPath
	var prefix []byte
	if !req.authorized {
		if !isForm {
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
		form.ParseBodyPrefix(r.Header.Get("Content-Type"), string(first), req.params)
		if req.authorized = s.authorized(r, req.params); !req.authorized {
			req.bodyLeft = true
			return nil
		}
		prefix = first
	}
	if !isForm {
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

// parseForm adds a POST body's parameters over params (form.ParseBody); a body that cannot be
// decoded is a 400, in the original's plain text when it names no multipart boundary.
func parseForm(contentType, body string, params map[string]string) *requestError {
	switch err := form.ParseBody(contentType, body, params); {
	case err == nil:
		return nil
	case errors.Is(err, form.ErrNoBoundary):
		return &requestError{status: http.StatusBadRequest, message: err.Error(), plain: true}
	default:
		return &requestError{status: http.StatusBadRequest, message: err.Error()}
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
