package sts

import (
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/metrics"
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
