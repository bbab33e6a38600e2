// Package webui is the table server's web page at /ui/: an overview of every list, live by
// Server-Sent Events, and a page per list to browse it by position, search it, add, upload,
// download and reset. It reads lists through the store (Lists, Page: browsing consumes nothing)
// and changes them only through the protocol's own commands (Protocol), so that a change from
// the page meets the same checks, limits and answers as a client's. The sts package mounts it.
package webui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Prefix is the path under which the page is served.
const Prefix = protocol.UIPath

// StopList is the list that is the STOP flag: raised while it holds a line. Injectors look at it
// with LENGTH (or a READ with KEEP=TRUE) and end their run when it is raised.
const StopList = "STOP"

// Protocol is what the page asks of the table server.
type Protocol interface {
	// Run runs a command with params as a client's request would (its checks, limits, metrics)
	// and returns the outcome. body is LOAD's file.
	Run(ctx context.Context, command string, params map[string]string, body []byte) Outcome
	// Export answers EXPORT of list as the protocol does: the lines as text in the write charset.
	Export(w http.ResponseWriter, r *http.Request, list string)
	// Matcher is FIND's test of a line for mode (SUBSTRING, EQUALS, REGEX_FIND, REGEX_MATCH):
	// the same regular expressions, with the same time limit.
	Matcher(mode, pattern string) (store.Matcher, error)
}

// Outcome is a command's answer.
type Outcome struct {
	OK bool
	// Status is the HTTP status the JSON form gives the answer: the page answers a failed change
	// with it.
	Status int
	// Text is the answer's text: the KO's message, or what OK carries (LOAD: the lines loaded).
	Text string
}

// Fact is a line of the server's facts on the overview.
type Fact struct{ Name, Value string }

// Options configure the page.
type Options struct {
	Store    store.Store
	Protocol Protocol
	// Token returns the token the protocol asks for, "" for none: the page then asks for it once
	// and keeps a session cookie derived from it (a rotated token ends the sessions).
	Token func() string
	// Facts returns the server's facts shown on the overview (version, backend, durability,
	// limits); the page adds the uptime.
	Facts func() []Fact
	// Activity returns how many reads (READ, READMULTI, FIND) and adds (ADD, LOAD) of a list this
	// server has answered OK: the overview shows them a second, per list and in all.
	Activity func(list string) (reads, adds int64)
	// Charset is the read charset: an upload must be text in it.
	Charset datafile.Charset
	// MaxBodyBytes bounds the body of every POST to the page (an upload's file with its form),
	// as it bounds a LOAD's body.
	MaxBodyBytes int64
	// Interval is how often the overview is sampled while someone watches (1 s when zero).
	Interval time.Duration
	// MaxStreams and MaxStreamsPerSession bound the live streams of the overview, in all and
	// per browser session (zero: no limit); a stream beyond either is refused (429).
	MaxStreams, MaxStreamsPerSession int
	// StreamWriteTimeout is how long a stream's write may wait for its browser to read before
	// the stream is dropped (DefaultStreamWriteTimeout when zero).
	StreamWriteTimeout time.Duration
	// SharedLogouts, when set, are the logouts of every server of the lists (the Redis backend:
	// pods behind one Service), so that a session logged out on one is refused by all. Without it
	// a logout ends the session on this server only, which is every server of the memory backend.
	SharedLogouts Logouts
	Log           *slog.Logger
}

// Logouts records the sessions logged out before their end where every server sees them.
type Logouts interface {
	// EndSession records that the session nonce, which would end by itself at end, was logged out.
	EndSession(ctx context.Context, nonce string, end time.Time) error
	// SessionEnded reports whether the session nonce was logged out.
	SessionEnded(ctx context.Context, nonce string) (bool, error)
}

// UI serves the page. Create it with New.
type UI struct {
	opt     Options
	started time.Time
	now     func() time.Time // the sessions' clock
	live    *hub
	pages   *template.Template
	// loggedOut are the sessions logged out here: see logout for why.
	loggedOut revocations
	streams   streamCounts // the live streams
}

//go:embed assets templates
var files embed.FS

// New returns the page for opt.
func New(opt Options) *UI {
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if opt.StreamWriteTimeout <= 0 {
		opt.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	u := &UI{opt: opt, started: time.Now(), now: time.Now}
	u.live = newHub(opt.Store, opt.Activity, opt.Interval, opt.Log)
	u.pages = template.Must(template.New("").Funcs(template.FuncMap{
		"lineNumber": func(i int) int { return i + 1 },
		"add":        func(a, b int) int { return a + b },
		"pathEscape": url.PathEscape,
		"lineOf":     func(path string, l shownLine) lineOfList { return lineOfList{Path: path, Line: l} },
	}).ParseFS(files, "templates/*.html"))
	return u
}

// Close ends the live streams (a graceful stop must not wait for browsers) and the sampling.
func (u *UI) Close() { u.live.close() }

// Streams returns how many live streams the page is sending.
func (u *UI) Streams() int { return u.streams.count() }

// securityHeaders are those of every answer of the page: it runs its own script only, loads
// nothing from elsewhere, and cannot be framed (a RESET button under someone else's page).
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// ServeHTTP answers every path under Prefix.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	path := strings.TrimPrefix(r.URL.Path, strings.TrimSuffix(Prefix, "/"))
	switch {
	case path == "":
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	case strings.HasPrefix(path, "/assets/"):
		u.serveAsset(w, r, strings.TrimPrefix(path, "/"))
		return
	case path == "/login":
		u.login(w, r)
		return
	}
	sess, ok := u.session(w, r)
	if !ok {
		u.askToken(w, r, "")
		return
	}
	if r.Method == http.MethodPost {
		// A form's line goes to ADD, an upload's file to LOAD: a POST to the page is bounded as
		// a protocol request's body is, framing included, so that --max-body-bytes is the bound
		// docs/security.md gives. Any POST is bounded, since a multipart body sent to another
		// form would otherwise be parsed whole.
		r.Body = http.MaxBytesReader(w, r.Body, u.opt.MaxBodyBytes)
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
			// Read here, so that a form too large is told so, not that its CSRF token is missing.
			if err := r.ParseForm(); err != nil {
				if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
					u.fail(w, r, sess, http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is larger than this server takes (--max-body-bytes: %d bytes).", u.opt.MaxBodyBytes))
					return
				}
				u.fail(w, r, sess, http.StatusBadRequest, "The form could not be read: "+err.Error())
				return
			}
		}
	}
	if r.Method == http.MethodPost && !sess.checkCSRF(r) {
		u.fail(w, r, sess, http.StatusForbidden, "This form has expired or did not come from this page: reload the page and try again.")
		return
	}
	switch {
	case path == "/" && r.Method == http.MethodGet:
		u.overview(w, r, sess)
	case path == "/events" && r.Method == http.MethodGet:
		u.events(w, r, sess)
	case path == "/stop" && r.Method == http.MethodPost:
		u.stopFlag(w, r, sess)
	case path == "/logout" && r.Method == http.MethodPost:
		u.logout(w, r, sess)
	case strings.HasPrefix(path, "/lists/"):
		u.listRoute(w, r, sess)
	default:
		u.notFound(w, r, sess, "There is no such page.")
	}
}

// assets are the files the page loads: its script and its style sheet.
var assets = map[string]bool{"assets/app.js": true, "assets/style.css": true}

// serveAsset serves the embedded script and style sheet.
func (u *UI) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	if !assets[name] {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, files, name)
}

// lineOfList is a line with the path of its list's page, for the "line" template.
type lineOfList struct {
	Path string
	Line shownLine
}

// page is what every template gets.
type page struct {
	Title   string
	CSRF    string
	Auth    bool // a token protects the page: show the log-out button
	Message string
	Error   string
	Data    any
}

func (u *UI) render(w http.ResponseWriter, status int, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := u.pages.ExecuteTemplate(&b, name, p); err != nil {
		u.opt.Log.Error("The web page failed to render", "template", name, "error", err)
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail shows a page that says what went wrong, with a link back.
func (u *UI) fail(w http.ResponseWriter, _ *http.Request, sess session, status int, message string) {
	u.render(w, status, "error.html", page{Title: http.StatusText(status), CSRF: sess.csrf, Auth: sess.auth, Error: message})
}

func (u *UI) notFound(w http.ResponseWriter, r *http.Request, sess session, message string) {
	u.fail(w, r, sess, http.StatusNotFound, message)
}
