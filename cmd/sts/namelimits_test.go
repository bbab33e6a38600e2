package main

import (
	"io"
	"strings"
	"testing"
)

// --max-lists and --max-name-bytes bound what STATUS lists: on by default, set by a flag or its
// STS_* variable, 0 for no limit, never negative.
func TestNameAndListLimitFlags(t *testing.T) {
	s, err := resolveSettings(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.server.Limits.MaxLists != 10000 || s.server.MaxNameBytes != 1024 {
		t.Errorf("defaults: max-lists %d, max-name-bytes %d; want 10000 and 1024", s.server.Limits.MaxLists, s.server.MaxNameBytes)
	}
	s, err = resolveSettings([]string{"--max-lists=5", "--max-name-bytes=2Ki"}, env(nil), io.Discard)
	if err != nil || s.server.Limits.MaxLists != 5 || s.server.MaxNameBytes != 2048 {
		t.Errorf("flags: %+v, %v", s, err)
	}
	s, err = resolveSettings(nil, env(map[string]string{"STS_MAX_LISTS": "0", "STS_MAX_NAME_BYTES": "64"}), io.Discard)
	if err != nil || s.server.Limits.MaxLists != 0 || s.server.MaxNameBytes != 64 {
		t.Errorf("environment: %+v, %v", s, err)
	}
	// The Redis backend counts its lists too.
	s, err = resolveSettings([]string{"--redis-url=redis://localhost:6379", "--max-lists=3"}, env(nil), io.Discard)
	if err != nil || s.server.Limits.MaxLists != 3 {
		t.Errorf("with Redis: %+v, %v", s, err)
	}
	if _, err := resolveSettings([]string{"--max-lists=-1"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "--max-lists must not be negative") {
		t.Errorf("a negative --max-lists: %v", err)
	}
}
