package sts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// REQUEST_ID (our extension): a client that sends a command that changes data with
// REQUEST_ID=<id> and retries it with the same id (an injector retrying after a timeout) gets the
// first answer again, byte for byte, and the retry changes nothing: a retried consuming READ does
// not lose a second line. The answer is kept in the store (Claim, Settle), so that every table
// server sharing a Redis agrees, for Config.RequestIDWindow.
//
// An answer that says "try again" (503: the backend could not be reached, the request was
// cancelled; nothing changed) is kept for retryWindow only, so that the retry it asks for runs
// the command again rather than being told to retry for the whole window. A change that could
// not be recorded (503 not_recorded) may have been made: that answer is kept as any other.

// maxIdentifierBytes bounds REQUEST_ID and LEASE, which a store keeps or looks up as keys.
const maxIdentifierBytes = 128

// inFlightPatience is how long a retry waits for the answer of its first request, which is still
// running (a READ with WAIT, say), before it is told so.
const inFlightPatience = 5 * time.Second

// retryWindow is how long a "try again" answer is kept: long enough to be a valid window for any
// store, short enough that the retry runs the command.
const retryWindow = time.Millisecond

// settleTimeout bounds the recording of an answer, which goes on after the client has left: a
// client that timed out is the one that retries.
const settleTimeout = 5 * time.Second

// checkIdentifier refuses an empty REQUEST_ID or LEASE, one over maxIdentifierBytes, and one
// holding a control character, which would forge a log line.
func checkIdentifier(command, param, value string) *reply {
	if value == "" || len(value) > maxIdentifierBytes || hasControl(value) {
		rep := koInvalid(command, param+" value has to be 1 to 128 bytes without control characters !")
		return &rep
	}
	return nil
}

// recordedAnswer is the answer of a request with a REQUEST_ID as the store keeps it: what was
// sent, and the request it answered, so that the id reused for another request is refused.
type recordedAnswer struct {
	Request []byte      `json:"request"` // fingerprint's
	Command string      `json:"command"` // for metrics
	OK      bool        `json:"ok"`
	Status  int         `json:"status"`
	Header  http.Header `json:"header"`
	Body    []byte      `json:"body"`
}

func (a *recordedAnswer) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for name, values := range a.Header {
		h[name] = values
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body) // a client that went away is no error of ours
}

// recorder is an http.ResponseWriter that keeps the answer, to be recorded and then sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// fingerprint is what tells one request from another for REQUEST_ID: the command, the form of the
// answer, the parameters (but REQUEST_ID itself, and TOKEN, which a rotation may change between
// tries) and a LOAD's body. The method is not in it: an ADD sent by GET or POST is the same ADD.
func fingerprint(req *request, command string) []byte {
	h := sha256.New()
	field := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint64(len(b))) // a hash.Hash never fails
		h.Write(b)
	}
	field([]byte(command))
	if req.json {
		field([]byte("json"))
	} else {
		field([]byte("html"))
	}
	names := make([]string, 0, len(req.params))
	for name := range req.params {
		if name != "REQUEST_ID" && name != "TOKEN" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		field([]byte(name))
		field([]byte(req.params[name]))
	}
	if req.body != nil {
		field([]byte(req.contentType))
		field(req.body)
	}
	return h.Sum(nil)
}

// requestID returns the REQUEST_ID of a command that changes data ("" when it has none, or the
// command changes nothing: the id is then ignored, so that a plan may send it with every
// command), or the refusal of an invalid one.
func requestID(req *request, command string) (string, *reply) {
	id, present := req.params["REQUEST_ID"]
	if !present || !routes[command].changes {
		return "", nil
	}
	return id, checkIdentifier(command, "REQUEST_ID", id)
}

// answerOnce answers a request with a REQUEST_ID: the first runs the command and records its
// answer, a retry is sent that answer. It returns the command and whether it succeeded, for the
// metrics.
func (s *Server) answerOnce(w http.ResponseWriter, req *request, command, id string) (string, bool) {
	request := fingerprint(req, command)
	stored, claimed, err := s.claim(req.ctx, id)
	switch {
	case err != nil:
		return s.send(w, req, storeFailure(command, "", err))
	case claimed:
		rec := &recorder{header: http.Header{}}
		rep := s.dispatch(req, command)
		s.send(rec, req, rep)
		first := recordedAnswer{Request: request, Command: rep.command, OK: rep.fail == nil, Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
		s.settle(req.ctx, id, &first, rep)
		first.writeTo(w)
		return first.Command, first.OK
	case stored == nil:
		return s.send(w, req, ko(command, http.StatusConflict, protocol.ReasonInProgress, "REQUEST_ID still in progress, retry later !"))
	}
	var first recordedAnswer
	if err := json.Unmarshal(stored, &first); err != nil {
		return s.send(w, req, ko(command, http.StatusInternalServerError, protocol.ReasonIO, "The answer kept for REQUEST_ID cannot be read !"))
	}
	if !bytes.Equal(first.Request, request) {
		return s.send(w, req, ko(command, http.StatusUnprocessableEntity, protocol.ReasonRequestIDReused, "REQUEST_ID was sent before with another request !"))
	}
	first.writeTo(w)
	return first.Command, first.OK
}

// claim claims id, or, while the request that holds it is running, asks again until it has
// answered, inFlightPatience has passed or ctx ends: answer is nil and claimed false then.
func (s *Server) claim(ctx context.Context, id string) (answer []byte, claimed bool, err error) {
	deadline := time.Now().Add(inFlightPatience)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		answer, claimed, err = s.store.Claim(ctx, id, s.cfg.RequestIDWindow)
		if err != nil || claimed || answer != nil || time.Now().Add(pause).After(deadline) {
			return answer, claimed, err
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// settle records the first answer of id in the store, even when its client has gone.
func (s *Server) settle(ctx context.Context, id string, first *recordedAnswer, rep reply) {
	window := s.cfg.RequestIDWindow
	if rep.fail != nil && rep.fail.status == http.StatusServiceUnavailable && rep.fail.reason != protocol.ReasonNotRecorded {
		window = retryWindow
	}
	data, _ := json.Marshal(first) // bytes, strings and numbers only: it cannot fail
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err := s.store.Settle(ctx, id, data, window); err != nil {
		// Its retries will be told that it is in progress until the window ends.
		s.log.Warn("The answer of a REQUEST_ID could not be recorded", "command", first.Command, "request_id", id, "error", err)
	}
}
