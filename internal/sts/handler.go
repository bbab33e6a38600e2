package sts

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/metrics"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
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
