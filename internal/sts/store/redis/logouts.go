package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// logoutKey marks the web page's session nonce as logged out, until the session would have ended
// by itself.
func (s *Store) logoutKey(nonce string) string { return s.prefix + "logout:" + nonce }

// EndSession records that the web page's session nonce was logged out, for every table server
// of this Redis (webui.Logouts): the session cookie is stateless, and each pod behind the Service
// would otherwise take a copy of it until its end. The key expires at that end, so a logged-out
// session costs Redis about a hundred bytes for at most the session's lifetime.
func (s *Store) EndSession(ctx context.Context, nonce string, end time.Time) error {
	if !end.After(time.Now()) {
		return nil
	}
	return s.client.SetArgs(ctx, s.logoutKey(nonce), 1, goredis.SetArgs{ExpireAt: end}).Err()
}

// SessionEnded reports whether the web page's session nonce was logged out on any table server
// of this Redis.
func (s *Store) SessionEnded(ctx context.Context, nonce string) (bool, error) {
	n, err := s.client.Exists(ctx, s.logoutKey(nonce)).Result()
	return n == 1, err
}
