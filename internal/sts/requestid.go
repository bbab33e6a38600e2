package sts

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"slices"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// REQUEST_ID (our extension): a client that sends a command that changes data with
// REQUEST_ID=<id> and sends it again with the same id (an injector retrying after a timeout, a
// connection cut, a 503) gets the outcome of the one execution: a retried consuming READ gets the
// line the first one took and takes no other, a retried ADD adds nothing. The store records the
// outcome of the change in the same atomic step as the change (store/request.go), so that the
// retry is safe whenever it comes and whichever server sharing a Redis it reaches, even when the
// first request's server died before answering. The answer is rendered again from that outcome.
//
// A command that changed nothing (an empty list, a duplicate, a refusal) records nothing: its
// retry runs again. An id sent before with another request (other parameters, another list) is
// refused with 422, for Config.RequestIDWindow.

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

// answerOnce answers a request with a REQUEST_ID: its fingerprint is bound to the id, then the
// command runs with the store.Request in its context, so that its change is made once. It
// returns the command and whether it succeeded, for the metrics.
func (s *Server) answerOnce(w http.ResponseWriter, req *request, command, id string) (string, bool) {
	r := store.Request{ID: id, Fingerprint: fingerprint(req, command), Window: s.cfg.RequestIDWindow}
	if err := s.store.BindRequest(req.ctx, r); err != nil {
		return s.send(w, req, storeFailure(command, "", err))
	}
	req.ctx = store.WithRequest(req.ctx, r)
	return s.send(w, req, s.dispatch(req, command))
}
