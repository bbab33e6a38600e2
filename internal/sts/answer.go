package sts

import (
	"net/http"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// A reply goes out in one of two forms: the original's HTML (answer_html.go), or the JSON form a
// client opts in to (answer_json.go); EXPORT's lines as plain text or a JSON array.

// Headers of a leased read and of EXTEND, in both forms, so that a plan extracts the lease from
// them whatever it parses the body with; spelt as documented (net/http would write X-Sts-Lease).
const (
	leaseHeader        = "X-STS-Lease"
	leaseExpiresHeader = "X-STS-Lease-Expires"
)

// write sends rep in the form the client asked for; htmlStatus is the status of the HTML form
// (200 for every command, as the original).
func (s *Server) write(w http.ResponseWriter, req *request, rep reply, htmlStatus int) {
	if rep.lease != "" {
		w.Header()[leaseHeader] = []string{rep.lease}
	}
	if !rep.expires.IsZero() {
		w.Header()[leaseExpiresHeader] = []string{rep.expires.Format(time.RFC3339Nano)}
	}
	switch {
	case rep.layout == layoutExport && rep.fail == nil:
		s.writeExport(w, rep.values)
	case req.json && rep.layout != layoutHelp:
		writeJSON(w, &rep)
	default:
		s.writeHTML(w, htmlStatus, encodeText(s.charset.response, renderHTML(&rep)))
	}
}

// writeRequestError answers a request that could not be parsed. A KO body is in the JSON form
// only when the Accept header asked for it, since the parameters could not be read.
func (s *Server) writeRequestError(w http.ResponseWriter, r *http.Request, e *requestError) {
	if e.plain {
		writePlain(w, e.status, e.message)
		return
	}
	reason := protocol.ReasonBadRequest
	if e.status == http.StatusRequestEntityTooLarge {
		reason = protocol.ReasonTooLarge
	}
	req := &request{json: wantsJSON(r, nil)}
	s.write(w, req, ko("", e.status, reason, e.message), e.status)
}
