// Package sts is the table server's HTTP protocol: a drop-in replacement for the JMeter "HTTP
// Simple Table Server" (see the protocol description in the README). It parses requests with the
// original's rules, runs the commands against a store.Store, and answers with the original's
// HTML bodies byte for byte, or with the JSON form when a client opts in. It also loads lists at
// startup, and serves the health endpoints, authentication and bulk load/export extensions.
package sts

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Server is the table server. Create it with NewServer and serve Handler.
type Server struct {
	cfg     Config
	store   store.Store
	log     *slog.Logger
	charset struct{ read, write, response datafile.Charset }
	// htmlContentType is the Content-Type of every HTML answer, built once.
	htmlContentType []string
	now             func() time.Time // SAVE's timestamp clock

	ready    atomic.Bool
	stop     chan struct{}
	stopOnce sync.Once
	handler  http.Handler
}

// NewServer returns a server for cfg that keeps its lists in st. It fails on an unknown charset.
func NewServer(cfg Config, st store.Store, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, store: st, log: log, now: time.Now, stop: make(chan struct{})}
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
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s, nil
}

// Handler returns the HTTP handler of the protocol, the health endpoints and the extensions.
func (s *Server) Handler() http.Handler { return s.handler }

// StopRequested is closed once a client has been answered OK to /sts/STOP; the process should
// then shut down gracefully.
func (s *Server) StopRequested() <-chan struct{} { return s.stop }

func (s *Server) requestStop() { s.stopOnce.Do(func() { close(s.stop) }) }

// Paths outside the original's protocol.
const (
	healthPath = "/healthz"
	readyPath  = "/readyz"
)

// serveHTTP handles the health endpoints, then runs a request the way the original does: the
// method check, the decoding of the target and body, then (our extension) the token check, the
// command, and the answer in the form the client asked for.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case healthPath:
		writePlain(w, http.StatusOK, "ok")
		return
	case readyPath:
		if s.ready.Load() {
			writePlain(w, http.StatusOK, "ok")
		} else {
			writePlain(w, http.StatusServiceUnavailable, "not ready")
		}
		return
	}
	method := normalizeMethod(r.Method)
	if method == "" {
		writePlain(w, http.StatusBadRequest, "BAD REQUEST: Syntax error.")
		return
	}
	req, err := s.parseRequest(w, r, method)
	if err != nil {
		s.writeRequestError(w, r, err)
		return
	}
	if !s.authorized(r, req.params) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		command := strings.TrimPrefix(req.path, commandPrefix)
		s.write(w, req, ko(command, http.StatusUnauthorized, reasonUnauthorized, "Unauthorized"), http.StatusUnauthorized)
		return
	}
	rep := s.dispatch(req)
	s.write(w, req, rep, http.StatusOK)
	if rep.command == cmdStop && rep.fail == nil {
		s.requestStop()
	}
}
