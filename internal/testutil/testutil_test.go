package testutil

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	lines := Numbered("p", 3)
	if want := []string{"p-000000", "p-000001", "p-000002"}; !slices.Equal(lines, want) {
		t.Errorf("Numbered: %q", lines)
	}
	if got := File(lines); got != "p-000000\np-000001\np-000002\n" {
		t.Errorf("File: %q", got)
	}
	if got := File(nil); got != "" {
		t.Errorf("File of no line: %q", got)
	}
}

func TestBodies(t *testing.T) {
	for _, text := range []string{"", "a;b", "</body>"} {
		if got, ok := OKLine(OKBody(text)); !ok || got != text {
			t.Errorf("OKLine(OKBody(%q)) = %q, %v", text, got, ok)
		}
	}
	if _, ok := OKLine(KOBody("No more line !")); ok {
		t.Error("OKLine took a KO body")
	}
}

func TestEventually(t *testing.T) {
	calls := 0
	Eventually(t, time.Second, time.Millisecond, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("%d calls, want 3", calls)
	}
}
