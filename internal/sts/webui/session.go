package webui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sessionCookie holds "<nonce>.<mac>": a random nonce per browser and, when the server has a
// token, the session's end and an HMAC of both keyed with the token ("<nonce>.<end>.<mac>"),
// which proves the browser was given the token without keeping it in the cookie. Every server
// with the same token accepts it (pods behind one Service); a rotated token ends every session,
// and a session ends by itself after sessionLifetime, so that a cookie copied off a laptop does
// not open the lists for ever.
const sessionCookie = "sts_ui"

// sessionLifetime is long enough for a soak test watched from the page and a day's work.
const sessionLifetime = 12 * time.Hour

// session is a browser's standing with the page.
type session struct {
	nonce string
	csrf  string    // the token every state-changing form carries: an HMAC of the nonce
	auth  bool      // the server has a token
	end   time.Time // with a token, when the session ends by itself
}

func mac(key, message string) string {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(message))
	return hex.EncodeToString(h.Sum(nil))
}

func newSession(token, nonce string) session {
	return session{nonce: nonce, csrf: mac(token, "csrf:"+nonce), auth: token != ""}
}

// checkCSRF reports whether a POST carries its session's form token. Another site's form cannot:
// it cannot read the page, and the cookie is SameSite=Strict.
func (s session) checkCSRF(r *http.Request) bool {
	// An upload's token is in the query: its multipart body is read once, by the upload, within
	// its own limit.
	got := r.URL.Query().Get("csrf")
	if got == "" && !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		got = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// session returns the browser's session. Without a token every browser gets one at its first
// visit (its nonce keys its CSRF token); with a token only a cookie made at login counts.
func (u *UI) session(w http.ResponseWriter, r *http.Request) (session, bool) {
	token := u.opt.Token()
	if s, ok := u.cookieSession(r, token); ok {
		return s, true
	}
	if token != "" {
		return session{auth: true}, false
	}
	return u.startSession(w, r, token), true
}

// cookieSession returns the session the browser's cookie holds, if this server takes it with
// token now: a live stream asks again at every tick, so that a session that ends, or a token
// that changes, ends the streams opened with it.
func (u *UI) cookieSession(r *http.Request, token string) (session, bool) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		nonce, rest, _ := strings.Cut(c.Value, ".")
		end, got, _ := strings.Cut(rest, ".")
		want := ""
		if token != "" {
			want = mac(token, "session:"+nonce+"."+end)
		} else {
			end, got = "", end
		}
		valid := nonce != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
		var ends time.Time
		if token != "" {
			endUnix, err := strconv.ParseInt(end, 10, 64)
			ends = time.Unix(endUnix, 0)
			valid = valid && err == nil && u.now().Before(ends) && !u.loggedOut.ended(nonce, ends) &&
				!u.endedElsewhere(r, nonce)
		}
		if valid {
			s := newSession(token, nonce)
			s.end = ends
			return s, true
		}
	}
	return session{}, false
}

// endedElsewhere reports whether another server logged the session nonce out (SharedLogouts).
// When they cannot tell (Redis unreachable) the session stands on this server's word: the page
// shows nothing it could change then, and the store's health reports the outage.
func (u *UI) endedElsewhere(r *http.Request, nonce string) bool {
	if u.opt.SharedLogouts == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), sharedLogoutTimeout)
	defer cancel()
	ended, err := u.opt.SharedLogouts.SessionEnded(ctx, nonce)
	return err == nil && ended
}

// sharedLogoutTimeout bounds a look at, or a record of, a shared logout.
const sharedLogoutTimeout = 2 * time.Second

// startSession sets a new session cookie: HttpOnly (no script reads it), SameSite=Strict (no
// other site's request carries it), Secure when the page is served over TLS.
func (u *UI) startSession(w http.ResponseWriter, r *http.Request, token string) session {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	nonce := hex.EncodeToString(b)
	value := nonce + "."
	cookie := &http.Cookie{Name: sessionCookie, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if token != "" {
		end := strconv.FormatInt(u.now().Add(sessionLifetime).Unix(), 10)
		value += end + "." + mac(token, "session:"+nonce+"."+end)
		cookie.MaxAge = int(sessionLifetime / time.Second)
	}
	cookie.Value = value
	http.SetCookie(w, cookie)
	return newSession(token, nonce)
}

// askToken shows the login form (401): no data without the token.
func (u *UI) askToken(w http.ResponseWriter, r *http.Request, problem string) {
	next := r.URL.RequestURI()
	switch {
	case r.URL.Path == Prefix+"login":
		next = localPath(r.PostFormValue("next"))
	case r.Method != http.MethodGet:
		next = Prefix
	}
	if r.URL.Path == Prefix+"events" {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return
	}
	u.render(w, http.StatusUnauthorized, "login.html", page{Title: "Log in", Error: problem, Data: next})
}

// login takes the token from the login form, compared in constant time.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	token := u.opt.Token()
	if r.Method != http.MethodPost || token == "" {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	given := strings.TrimSpace(r.PostFormValue("token"))
	if subtle.ConstantTimeCompare([]byte(given), []byte(token)) != 1 {
		u.askToken(w, r, "That is not the server's token.")
		return
	}
	u.startSession(w, r, token)
	http.Redirect(w, r, localPath(r.PostFormValue("next")), http.StatusSeeOther)
}

// localPath keeps a redirect on the page: a path under Prefix, never another site's address nor
// another path of this server. The path is checked as a browser will resolve it (dot segments,
// escaped ones too, removed) and sent as checked: "/ui/../sts/RESET" or "/ui/%2e%2e/sts/RESET"
// would leave the page. A backslash is refused: a browser takes one for a slash.
func localPath(next string) string {
	p, err := url.Parse(next)
	if err != nil || p.Scheme != "" || p.Host != "" || p.Opaque != "" || strings.HasPrefix(next, "//") || strings.Contains(p.Path, `\`) {
		return Prefix
	}
	clean := path.Clean(p.Path)
	if strings.HasSuffix(p.Path, "/") && !strings.HasSuffix(clean, "/") {
		clean += "/"
	}
	if !strings.HasPrefix(clean, Prefix) {
		return Prefix
	}
	return (&url.URL{Path: clean, RawQuery: p.RawQuery}).RequestURI()
}

// logout ends the session: the browser forgets its cookie, and this server refuses it from now
// on, and so do the others sharing its lists (SharedLogouts), so that a copy of the cookie is
// worth nothing either (it is stateless otherwise: any server with the token would take it until
// its end).
func (u *UI) logout(w http.ResponseWriter, r *http.Request, sess session) {
	if sess.auth {
		u.loggedOut.revoke(sess.nonce, sess.end, u.now())
		if u.opt.SharedLogouts != nil {
			ctx, cancel := context.WithTimeout(r.Context(), sharedLogoutTimeout)
			if err := u.opt.SharedLogouts.EndSession(ctx, sess.nonce, sess.end); err != nil {
				u.opt.Log.Warn("a logout is not shared with the other servers: they take the session until it ends", "err", err, "ends", sess.end)
			}
			cancel()
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: Prefix, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// maxLoggedOut bounds the sessions a server remembers as logged out: a few hundred bytes each,
// about 1 MiB at most.
const maxLoggedOut = 4096

// revocations are the sessions logged out on this server, each kept until it would have ended by
// itself. When maxLoggedOut are kept, every session begun until then is ended instead (a session
// epoch): all browsers log in again, and no logged-out session comes back.
type revocations struct {
	mu       sync.Mutex
	sessions map[string]time.Time // a logged-out session's nonce: its own end
	// notBefore ends every session that began before it (the zero time: none).
	notBefore time.Time
}

// revoke ends the session nonce, which would end by itself at end.
func (r *revocations) revoke(nonce string, end, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions == nil {
		r.sessions = map[string]time.Time{}
	}
	if len(r.sessions) >= maxLoggedOut {
		for n, e := range r.sessions {
			if !now.Before(e) {
				delete(r.sessions, n)
			}
		}
	}
	if len(r.sessions) >= maxLoggedOut {
		// A session begun in this very second would escape an epoch of now: the next second
		// ends them all, at the cost of a second's logins being ended too.
		r.notBefore = now.Truncate(time.Second).Add(time.Second)
		clear(r.sessions)
		return
	}
	r.sessions[nonce] = end
}

// ended reports whether the session nonce, which ends by itself at end, was ended here.
func (r *revocations) ended(nonce string, end time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, revoked := r.sessions[nonce]
	return revoked || end.Add(-sessionLifetime).Before(r.notBefore)
}
