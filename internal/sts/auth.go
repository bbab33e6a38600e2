package sts

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorized reports whether a request may run a command: always when no token is configured,
// otherwise when it carries the token in an "Authorization: Bearer" header or, for JMeter plans
// that cannot set headers easily, a TOKEN parameter. Tokens are compared in constant time.
func (s *Server) authorized(r *http.Request, params map[string]string) bool {
	if s.cfg.AuthToken == "" {
		return true
	}
	if scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " "); found &&
		strings.EqualFold(scheme, "Bearer") && s.tokenMatches(strings.TrimSpace(token)) {
		return true
	}
	token, present := params["TOKEN"]
	return present && s.tokenMatches(token)
}

func (s *Server) tokenMatches(token string) bool {
	return subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.AuthToken)) == 1
}
