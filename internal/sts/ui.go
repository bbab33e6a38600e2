package sts

import (
	"context"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/webui"
	"github.com/sts-operator/sts-operator/internal/version"
)

// The web page (package webui) is mounted here, and changes lists only through pageProtocol: the
// protocol's own commands, run as a client's request is, with its checks, limits and metrics.

// pageProtocol is the server as the web page sees it.
type pageProtocol struct{ s *Server }

// Run runs a command for the page. The page has checked the browser's session; the command meets
// the server's phase as a client's does.
func (p pageProtocol) Run(ctx context.Context, command string, params map[string]string, body []byte) webui.Outcome {
	s := p.s
	rep, refused := s.unavailable(command)
	if !refused {
		req := &request{ctx: ctx, method: http.MethodPost, path: protocol.CommandPrefix + command, params: params, body: body, authorized: true}
		start := time.Now()
		rep = s.dispatch(req, command)
		s.metrics.ObserveCommand(metricName(rep.command), rep.fail == nil, time.Since(start))
		s.activity.count(rep.command, req.list, rep.fail == nil)
	}
	if rep.fail != nil {
		return webui.Outcome{Status: rep.fail.status, Text: rep.fail.message}
	}
	return webui.Outcome{OK: true, Status: http.StatusOK, Text: rep.text()}
}

// Export answers EXPORT for the page's download link.
func (p pageProtocol) Export(w http.ResponseWriter, r *http.Request, list string) {
	req := &request{ctx: r.Context(), method: http.MethodGet, path: protocol.CommandPrefix + protocol.CmdExport, params: map[string]string{"FILENAME": list}, authorized: true}
	rep := p.s.dispatch(req, protocol.CmdExport)
	status := http.StatusOK
	if rep.fail != nil {
		status = rep.fail.status
	}
	p.s.write(w, req, rep, status)
}

// Matcher is FIND's test of a line, for the page's search.
func (p pageProtocol) Matcher(mode, pattern string) (store.Matcher, error) {
	return p.s.matcher(mode, pattern)
}

// pageFacts are the server's facts the overview shows.
func (s *Server) pageFacts() []webui.Fact {
	backend := "memory (this process)"
	if h, shared := s.store.(store.Health); shared {
		backend = h.Name() + " (shared)"
	}
	limit := func(n int64) string {
		if n <= 0 {
			return "none"
		}
		return strconv.FormatInt(n, 10)
	}
	l := s.cfg.Limits
	durability := s.cfg.Durability
	if durability == "" {
		durability = "none: the lists live in this process only"
	}
	return []webui.Fact{
		{Name: "version", Value: version.Version},
		{Name: "backend", Value: backend},
		{Name: "durability", Value: durability},
		{Name: "max lines per list", Value: limit(l.MaxLinesPerList)},
		{Name: "max total bytes", Value: limit(l.MaxTotalBytes)},
		{Name: "max line bytes", Value: limit(l.MaxLineBytes)},
		{Name: "max lists", Value: limit(l.MaxLists)},
		{Name: "max body bytes", Value: limit(s.cfg.MaxBodyBytes)},
	}
}

// newPage builds the web page of the server.
func (s *Server) newPage() *webui.UI {
	// A backend that several servers share (Redis) shares their logouts too.
	logouts, _ := s.store.(webui.Logouts)
	return webui.New(webui.Options{
		Store: s.store, Protocol: pageProtocol{s}, Token: func() string { return *s.authToken.Load() },
		Facts: s.pageFacts, Charset: s.charset.read, MaxBodyBytes: s.cfg.MaxBodyBytes, Log: s.log,
		Interval: s.cfg.PageInterval, MaxStreams: s.cfg.PageMaxStreams, MaxStreamsPerSession: s.cfg.PageMaxStreamsPerSession,
		StreamWriteTimeout: s.cfg.PageStreamWriteTimeout,
		Activity:           s.activity.of, SharedLogouts: logouts,
	})
}

// isPagePath says a path is the web page's.
func isPagePath(path string) bool {
	return path == strings.TrimSuffix(webui.Prefix, "/") || strings.HasPrefix(path, webui.Prefix)
}

// indexTemplate is the answer of GET /: what this server is and where to go, rather than the
// original's KO for an unknown command.
const indexTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sts: HTTP Simple Table Server</title></head>
<body>
<h1>sts: HTTP Simple Table Server</h1>
<p>A table server for load tests (sts-operator version {VERSION}), a drop-in replacement for the
JMeter plugin "HTTP Simple Table Server": clients read, add and find lines of named lists with
<code>/sts/COMMAND?FILENAME=&lt;list&gt;&amp;...</code>, for example
<code>/sts/READ?FILENAME=logins.csv&amp;READ_MODE=FIRST&amp;KEEP=FALSE</code>.</p>
<ul>
{UI}<li><a href="/sts/">/sts/</a>: every command and its parameters</li>
<li><a href="/sts/STATUS">/sts/STATUS</a>: the lists and their lengths (<a href="/sts/STATUS?FORMAT=JSON">JSON</a>)</li>
<li><a href="/metrics">/metrics</a>: Prometheus metrics</li>
<li><a href="/healthz">/healthz</a> and <a href="/readyz">/readyz</a>: health and readiness</li>
</ul>
</body></html>
`

// index answers GET / with indexTemplate.
func (s *Server) index(w http.ResponseWriter) {
	ui := ""
	if s.page != nil {
		ui = `<li><a href="/ui/">/ui/</a>: the web page, to watch, search and edit the lists live</li>` + "\n"
	}
	body := strings.NewReplacer("{VERSION}", html.EscapeString(version.Version), "{UI}", ui).Replace(indexTemplate)
	s.writeHTML(w, http.StatusOK, encodeText(s.charset.response, []byte(body)))
}
