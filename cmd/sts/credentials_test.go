package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// --redis-username-file and --redis-password-file (or STS_REDIS_USERNAME_FILE and
// STS_REDIS_PASSWORD_FILE, as the operator mounts them from one Secret) give the ACL user that
// replaces the URL's, read trimmed: the right pair reaches Redis, a wrong username is refused
// credentials, logged, and the store unavailable. Without --redis-url they are refused.
func TestRedisCredentialFiles(t *testing.T) {
	if _, err := resolveSettings([]string{"--redis-username-file", "/u"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "--redis-username-file needs --redis-url") {
		t.Errorf("--redis-username-file without --redis-url: %v", err)
	}

	srv := redistest.Start(t, redistest.WithPassword("default-pw"), redistest.WithUser("sts-user", "user-pw"))
	password := writeTemp(t, "password", " user-pw\n")
	open := func(username string) (store.Store, *testutil.Buffer) {
		t.Helper()
		s, err := resolveSettings(nil, env(map[string]string{
			"STS_REDIS_URL":           "redis://" + srv.Addr + "/0", // no user or password in it
			"STS_REDIS_USERNAME_FILE": writeTemp(t, "username", username+"\n"),
			"STS_REDIS_PASSWORD_FILE": password,
		}), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		log := &testutil.Buffer{}
		st, _, err := openStore(s, slog.New(slog.NewTextHandler(log, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st, log
	}
	ctx := context.Background()

	st, _ := open("sts-user")
	testutil.Until(t, 10*time.Second, 10*time.Millisecond, "the store up as sts-user", st.(store.Health).Up)
	if err := st.Add(ctx, "l", "a", store.Last, false); err != nil {
		t.Fatalf("Add as sts-user: %v", err)
	}
	if who, err := srv.Do("CLIENT", "LIST"); err != nil || !strings.Contains(who.(string), "user=sts-user") {
		t.Errorf("CLIENT LIST shows no connection of sts-user: %v, %v", who, err)
	}

	wrong, log := open("nobody")
	if _, err := wrong.Length(ctx, "l"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Length as a wrong user: %v, want store.ErrUnavailable", err)
	}
	if !strings.Contains(log.String(), "Redis refused the credentials") {
		t.Errorf("the log does not say the credentials were refused:\n%s", log)
	}
	if wrong.(store.Health).Up() {
		t.Error("the store is up as a wrong user")
	}
}
