package sts

import (
	"net/http"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// send writes a command's answer, and returns its command and whether it succeeded. A store that
// cannot reach its backend, or whose backend did not answer a change, answers with its 503 in the
// HTML form too, as a refusal does: a plan's retry looks at the status.
func (s *Server) send(w http.ResponseWriter, req *request, rep reply) (string, bool) {
	if rep.fail != nil && (rep.fail.reason == protocol.ReasonBackendUnavailable || rep.fail.reason == protocol.ReasonOutcomeUnknown) {
		s.refuse(w, req, rep)
	} else {
		s.write(w, req, rep, http.StatusOK)
	}
	return rep.command, rep.fail == nil
}

// unavailable returns the refusal of a command that arrives while the server cannot take it.
func (s *Server) unavailable(command string) (reply, bool) {
	switch s.phase.Load() {
	case phaseStarting:
		if s.cfg.WaitForStartup {
			return ko(command, http.StatusServiceUnavailable, protocol.ReasonUnavailable, "Server is starting, retry later !"), true
		}
	case phaseStopping:
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonUnavailable, "Server is stopping !"), true
	}
	if h, shared := s.store.(store.Health); shared && !h.Up() {
		// Known down: answer now rather than after the client's dial attempts time out (behind a
		// firewall that drops packets, each command would wait 10 to 20 s for them). The health
		// check notices Redis back within its interval.
		return storeFailure(command, "", store.ErrUnavailable), true
	}
	return reply{}, false
}

// refuse answers a request that is not run with the HTTP status of its failure, in both forms:
// unlike a command's KO, which the original answers 200, these are the transport's answers.
func (s *Server) refuse(w http.ResponseWriter, req *request, rep reply) {
	if rep.fail.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	s.write(w, req, rep, rep.fail.status)
}

// notReady says why /readyz fails, "" when the server is ready: it is ready only while serving
// and while the store's backend answers (a server that cannot reach Redis is not ready, so that
// a Service sends clients to one that can).
func (s *Server) notReady() string {
	switch s.phase.Load() {
	case phaseStarting:
		return "starting"
	case phaseStopping:
		return "stopping"
	}
	if h, shared := s.store.(store.Health); shared && !h.Up() {
		return "the " + h.Name() + " backend does not answer"
	}
	return ""
}

// metricName is the command label of the metrics: the command, or UNKNOWN for an unknown one. A
// reply's command is always one of the protocol's names or "", so clients cannot make up labels.
func metricName(command string) string {
	if command == "" {
		return "UNKNOWN"
	}
	return command
}
