// Package sts is the table server's HTTP protocol: a drop-in replacement for the JMeter "HTTP
// Simple Table Server" (see the protocol description in the README). It parses requests with the
// original's rules, runs the commands against a store.Store, and answers with the original's
// HTML bodies byte for byte, or with the JSON form when a client opts in. It also loads lists at
// startup, and serves the health and metrics endpoints, authentication, blocking reads and the
// bulk load/export extensions.
package sts

import (
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/metrics"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/webui"
)

// Server is the table server. Create it with NewServer and serve Handler.
type Server struct {
	cfg     Config
	store   store.Store
	log     *slog.Logger
	metrics *metrics.Metrics
	charset struct{ read, write, response datafile.Charset }
	// htmlContentType is the Content-Type of every HTML answer, built once.
	htmlContentType []string
	now             func() time.Time // SAVE's timestamp clock

	phase atomic.Int32 // starting, serving or stopping
	// authToken is the token requests must carry ("" for none): Config.AuthToken, until
	// SetAuthToken replaces it.
	authToken atomic.Pointer[string]
	// loadFailures are the startup loads that failed, set once startup loading is done.
	loadFailures atomic.Pointer[[]loadFailure]
	stop         chan struct{}
	stopOnce     sync.Once
	handler      http.Handler
	page         *webui.UI // nil with Config.NoWebUI
	activity     activity  // the reads and adds of each list, for the page
}

// The phases of a server's life. /readyz answers 200 only while serving. Commands run while
// serving, and while starting unless Config.WaitForStartup.
const (
	phaseStarting int32 = iota
	phaseServing
	phaseStopping
)

// NewServer returns a server for cfg that keeps its lists in st. It fails on an unknown charset.
func NewServer(cfg Config, st store.Store, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, store: st, log: log, now: time.Now, stop: make(chan struct{})}
	s.authToken.Store(&cfg.AuthToken)
	for _, c := range []struct {
		setting, name string
		into          *datafile.Charset
	}{
		{"read", cfg.CharsetRead, &s.charset.read},
		{"write", cfg.CharsetWrite, &s.charset.write},
		{"response", cfg.CharsetResponse, &s.charset.response},
	} {
		cs, err := datafile.LookupCharset(c.name)
		if err != nil {
			return nil, fmt.Errorf("%s charset: %w", c.setting, err)
		}
		*c.into = cs
	}
	s.htmlContentType = []string{"text/html; charset=" + cfg.CharsetResponse}
	s.metrics = metrics.New(st, cfg.MetricsMaxLists)
	if !cfg.NoWebUI {
		s.page = s.newPage()
	}
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s, nil
}

// Handler returns the HTTP handler of the protocol, the health and metrics endpoints and the
// extensions.
func (s *Server) Handler() http.Handler { return s.handler }

// Metrics returns the server's metrics, to which a journal reports its fsyncs and size.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// StopRequested is closed once a client has been answered OK to /sts/STOP; the process should
// then shut down gracefully.
func (s *Server) StopRequested() <-chan struct{} { return s.stop }

func (s *Server) requestStop() { s.stopOnce.Do(func() { close(s.stop) }) }

// Drain begins a graceful stop: /readyz fails, new commands are refused with HTTP 503, and
// waiting reads answer at once as if their wait had ended. Commands already running finish; the
// caller then shuts the HTTP server down, which waits for them.
func (s *Server) Drain() {
	s.phase.Store(phaseStopping)
	s.store.EndWaits()
	if s.page != nil {
		s.page.Close() // its live streams would hold the shutdown up
	}
}

// Paths outside the original's protocol.
const (
	healthPath  = "/healthz"
	readyPath   = "/readyz"
	metricsPath = "/metrics"
)

// serveHTTP handles the health and metrics endpoints, then runs a request the way the original
// does: the method check, the decoding of the target and body, then (our extensions) the token
// check, the server's phase, the command, and the answer in the form the client asked for. The
// token is checked while the request is parsed, before its body is read (parseRequest): a
// request refused for its token has had at most authPrefixBytes of its body read.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// Every answer, not only the HTML ones: a browser that sniffed an EXPORT or a plain-text
	// answer holding markup would render it as a page of this origin.
	w.Header()["X-Content-Type-Options"] = noSniff
	switch r.URL.Path {
	case healthPath:
		writePlain(w, http.StatusOK, "ok")
		return
	case readyPath:
		if why := s.notReady(); why != "" {
			writePlain(w, http.StatusServiceUnavailable, "not ready: "+why)
		} else {
			writePlain(w, http.StatusOK, "ok")
		}
		return
	case metricsPath:
		s.serveMetrics(w, r)
		return
	case "/":
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			s.index(w)
			return
		}
	}
	if s.page != nil && isPagePath(r.URL.Path) {
		s.page.ServeHTTP(w, r)
		return
	}
	method := normalizeMethod(r.Method)
	if method == "" {
		writePlain(w, http.StatusBadRequest, "BAD REQUEST: Syntax error.")
		return
	}
	// net/http leaves out the body of an answer, and keeps the connection in step, only for the
	// method spelt exactly "HEAD", which it reads from this Request: a "head" must count as one.
	r.Method = method
	req, err := s.parseRequest(w, r, method)
	if err != nil {
		s.writeRequestError(w, r, err)
		return
	}
	command := commandOf(req)
	if !req.authorized {
		if req.bodyLeft {
			// The rest of the body is not read, nor drained: the connection cannot carry
			// another request.
			w.Header().Set("Connection", "close")
		}
		s.refuse(w, req, ko(command, http.StatusUnauthorized, protocol.ReasonUnauthorized, "Unauthorized"))
		return
	}
	if rep, refused := s.unavailable(command); refused {
		s.refuse(w, req, rep)
		return
	}
	if _, waits := req.params["WAIT"]; waits {
		// net/http cancels a request whose read deadline passes: none while a read waits.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	}
	start := time.Now()
	var ok bool
	switch id, invalid := requestID(req, command); {
	case invalid != nil:
		command, ok = s.send(w, req, *invalid)
	case id != "":
		command, ok = s.answerOnce(w, req, command, id)
	default:
		command, ok = s.send(w, req, s.dispatch(req, command))
	}
	s.metrics.ObserveCommand(metricName(command), ok, time.Since(start))
	if s.page != nil {
		s.activity.count(command, req.list, ok)
	}
	if command == protocol.CmdStop && ok {
		s.requestStop()
	}
}

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
		// Known down: answer now rather than after the client's dial attempts time out (an
		// unreachable Redis behind a dropping firewall held each command 10 to 20 s). The health
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

// serveMetrics serves /metrics, behind the token when Config.MetricsAuth says so.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	params := map[string]string{}
	if token, present := r.URL.Query()["TOKEN"]; present {
		params["TOKEN"] = token[len(token)-1]
	}
	if s.cfg.MetricsAuth && !s.authorized(r, params) {
		s.refuse(w, &request{json: wantsJSON(r, nil)}, ko("", http.StatusUnauthorized, protocol.ReasonUnauthorized, "Unauthorized"))
		return
	}
	s.metrics.Handler().ServeHTTP(w, r)
}

// metricName is the command label of the metrics: the command, or UNKNOWN for an unknown one. A
// reply's command is always one of the protocol's names or "", so clients cannot make up labels.
func metricName(command string) string {
	if command == "" {
		return "UNKNOWN"
	}
	return command
}
