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
const loadPath = commandPrefix + cmdLoad

// parseRequest decodes the target and, for POST, the body. The target is taken raw from the
// request line (r.RequestURI) because the original splits it at the first '?' and decodes both
// parts itself; Go's own decoding differs ('+', invalid UTF-8).
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
	if method == http.MethodPost {
		body, err := s.readBody(w, r)
		if err != nil {
			return nil, err
		}
		if path == loadPath {
			req.body = body
		} else if err := parseForm(r.Header.Get("Content-Type"), body, req.params); err != nil {
			return nil, err
		}
	}
	req.json = wantsJSON(r, req.params)
	return req, nil
}

// readBody reads the whole body within the configured limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *requestError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &requestError{status: http.StatusRequestEntityTooLarge,
			message: fmt.Sprintf("Request body larger than %d bytes !", tooLarge.Limit)}
	case err != nil:
		return nil, &requestError{status: http.StatusBadRequest, message: "Cannot read the request body : " + err.Error()}
	}
	return body, nil
}

// parseForm adds a POST body's parameters over params. A multipart/form-data body gives one
// parameter per part; any other body, whatever its type, is trimmed and parsed like a query
// string, as the original does.
func parseForm(contentType string, body []byte, params map[string]string) *requestError {
	mediaType, _, _ := strings.Cut(contentType, ";")
	if !strings.EqualFold(strings.TrimSpace(mediaType), "multipart/form-data") {
		err := parseQuery(javaTrim(string(body)), params)
		if err != nil {
			return &requestError{status: http.StatusBadRequest, message: err.Error()}
		}
		return nil
	}
	boundary, found := multipartBoundary(contentType)
	if !found {
		return &requestError{status: http.StatusBadRequest, message: multipartNoBoundary, plain: true}
	}
	if err := parseMultipart(body, boundary, params); err != nil {
		return &requestError{status: http.StatusBadRequest, message: "Malformed multipart/form-data body : " + err.Error()}
	}
	return nil
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
// as the original does.
func parseMultipart(body []byte, boundary string, params map[string]string) error {
	if !bytes.Contains(body, []byte("--"+boundary)) {
		return errors.New("the body holds no boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		value, err := io.ReadAll(part)
		if err != nil {
			return err
		}
		if name := part.FormName(); name != "" {
			params[name] = lineBreaks.Replace(utf8Text.Decode(string(value)))
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
