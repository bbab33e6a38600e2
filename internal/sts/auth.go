package sts

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// authorized reports whether a request may run a command: always when no token is configured,
// otherwise when it carries the token in an "Authorization: Bearer" header or, for JMeter plans
// that cannot set headers easily, a TOKEN parameter. Tokens are compared in constant time.
// parseRequest asks it before reading a body, with the query's parameters, and again with a
// form body's over them (readPost): a token in any of these places is enough.
func (s *Server) authorized(r *http.Request, params map[string]string) bool {
	want := *s.authToken.Load() // one token for the whole check, even while it is being rotated
	if want == "" {
		return true
	}
	if scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " "); found &&
		strings.EqualFold(scheme, "Bearer") && tokenMatches(strings.TrimSpace(token), want) {
		return true
	}
	token, present := params["TOKEN"]
	return present && tokenMatches(token, want)
}

func tokenMatches(token, want string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

// SetAuthToken replaces the token requests must carry, for a rotated Secret: requests that
// arrive after it returns need the new one. A server started without a token cannot be given
// one, nor can a token be taken away: either would change who may use the lists.
func (s *Server) SetAuthToken(token string) error {
	if token == "" || s.cfg.AuthToken == "" {
		return errors.New("the auth token can be replaced, not added or removed")
	}
	s.authToken.Store(&token)
	return nil
}
