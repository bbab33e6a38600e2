package sts

import (
	"log/slog"
	"net/http"

	"github.com/sts-operator/sts-operator/internal/sts/webui"
)

// netHTTPHeadSlack is what net/http accepts beyond http.Server.MaxHeaderBytes (its "bufio slop").
const netHTTPHeadSlack = 4096

// HTTPServer returns the net/http server that serves Handler on addr with the transport limits
// the original lacks: request heads up to MaxHeaderBytes (net/http answers a larger one with
// 431 before any command runs, so nothing is executed twice), and timeouts that drop clients
// sending their head or body too slowly or staying idle. "OPTIONS *" reaches the protocol, which
// answers it as an unknown command like the original.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:                         addr,
		Handler:                      s.handler,
		MaxHeaderBytes:               MaxHeaderBytes - netHTTPHeadSlack,
		ReadHeaderTimeout:            s.cfg.ReadHeaderTimeout,
		ReadTimeout:                  s.cfg.ReadTimeout,
		IdleTimeout:                  s.cfg.IdleTimeout,
		DisableGeneralOptionsHandler: true,
		// The web page's live streams bound their connection's send buffer and reset it when
		// their browser stops reading.
		ConnContext: webui.ConnContext,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
