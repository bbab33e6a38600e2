package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// startServer runs a real table server on a loopback port and returns its URL and store.
func startServer(t *testing.T, token string) (string, *memory.Memory) {
	t.Helper()
	return startServerBehind(t, token, func(h http.Handler) http.Handler { return h })
}

// startServerBehind is startServer with a wrapper around the server's handler.
func startServerBehind(t *testing.T, token string, wrap func(http.Handler) http.Handler) (string, *memory.Memory) {
	t.Helper()
	st := memory.New()
	cfg := sts.DefaultConfig()
	cfg.AuthToken = token
	srv, err := sts.NewServer(cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(wrap(srv.Handler()))
	t.Cleanup(hs.Close)
	return hs.URL, st
}

// printed returns the lines that consume -print wrote, in output order.
func printed(t *testing.T, stdout string) []string {
	t.Helper()
	var got []string
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		v, ok := strings.CutPrefix(l, "= ")
		if !ok {
			t.Fatalf("stdout line %q lacks the \"= \" prefix", l)
		}
		got = append(got, v)
	}
	return got
}

func TestConsumeDrainsEveryLineOnce(t *testing.T) {
	url, st := startServer(t, "")
	want := testutil.Numbered("single", 3000)
	st.Replace(context.Background(), "single.csv", slices.Clone(want), "")

	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"consume", "-url", url, "-list", "single.csv", "-workers", "8", "-print"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("consume: %v\n%s", err, stderr.String())
	}
	got := printed(t, stdout.String())
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("consumed %d lines, want the %d input lines exactly once", len(got), len(want))
	}
	if n, _ := st.Length(context.Background(), "single.csv"); n != 0 {
		t.Errorf("list length after the run = %d, want 0", n)
	}
	if summary := stderr.String(); !strings.Contains(summary, "stsload consume list=single.csv read=3000 refused=0 failed=0") {
		t.Errorf("summary = %q", summary)
	}
}

// TestLedgerRecordsWhatEachConsumerRead: two consumers drain one list and record what they got
// on a ledger server whose first answer breaks in transport; the ledger holds each consumer's
// lines in the order it printed them, and its summary.
func TestLedgerRecordsWhatEachConsumerRead(t *testing.T) {
	url, st := startServer(t, "")
	want := testutil.Numbered("single", 2000)
	st.Replace(context.Background(), "single.csv", slices.Clone(want), "")
	var broken atomic.Bool
	ledgerURL, ledger := startServerBehind(t, "", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if broken.CompareAndSwap(false, true) {
				panic(http.ErrAbortHandler) // the connection closes without an answer
			}
			h.ServeHTTP(w, r)
		})
	})

	var all []string
	stdout := map[string]*bytes.Buffer{"a": {}, "b": {}}
	var wg sync.WaitGroup
	for name, out := range stdout {
		wg.Go(func() {
			args := []string{"consume", "-url", url, "-list", "single.csv", "-workers", "4", "-print", "-ledger", ledgerURL, "-name", name}
			if err := run(t.Context(), args, out, io.Discard); err != nil {
				t.Errorf("consumer %s: %v", name, err)
			}
		})
	}
	wg.Wait()
	if !broken.Load() {
		t.Fatal("no request reached the ledger")
	}
	for name, out := range stdout {
		lines, err := ledger.Lines(context.Background(), name+".lines")
		if err != nil {
			t.Fatalf("ledger list %s.lines: %v", name, err)
		}
		if got := printed(t, out.String()); !slices.Equal(lines, got) {
			t.Errorf("ledger %s.lines holds %d lines, but the consumer printed %d (or another order)", name, len(lines), len(got))
		}
		summary, err := ledger.Lines(context.Background(), name+".summary")
		wantSummary := fmt.Sprintf("stsload consume list=single.csv read=%d refused=0 failed=0", len(lines))
		if err != nil || !slices.Equal(summary, []string{wantSummary}) {
			t.Errorf("ledger %s.summary = %q (%v), want %q", name, summary, err, wantSummary)
		}
		all = append(all, lines...)
	}
	slices.Sort(all)
	if !slices.Equal(all, want) {
		t.Errorf("the ledger holds %d lines in all, want the %d input lines exactly once", len(all), len(want))
	}
}

func TestQueueKeepsOrderAcrossProducerAndConsumer(t *testing.T) {
	url, _ := startServer(t, "")
	ctx := context.Background()
	consumed := make(chan string, 1)
	go func() {
		var stdout bytes.Buffer
		// Started before the producer: the list does not exist yet, and -idle waits for it.
		err := run(ctx, []string{"consume", "-url", url, "-list", "queue", "-idle", "2s", "-print"}, &stdout, io.Discard)
		if err != nil {
			t.Errorf("consume: %v", err)
		}
		consumed <- stdout.String()
	}()
	var stderr bytes.Buffer
	if err := run(ctx, []string{"produce", "-url", url, "-list", "queue", "-prefix", "p0", "-count", "400", "-rate", "2000"}, io.Discard, &stderr); err != nil {
		t.Fatalf("produce: %v\n%s", err, stderr.String())
	}
	if got := printed(t, <-consumed); !slices.Equal(got, testutil.Numbered("p0", 400)) {
		t.Errorf("the consumer got %d lines out of order or incomplete: first %q", len(got), got[:min(3, len(got))])
	}
}

func TestKOStopsTheRun(t *testing.T) {
	url, st := startServer(t, "right")
	st.Replace(context.Background(), "l", []string{"a"}, "")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"consume", "-url", url, "-list", "l", "-token-file", tokenFile}, io.Discard, io.Discard)
	var ko *koError
	if !errors.As(err, &ko) || ko.reason != protocol.ReasonUnauthorized {
		t.Fatalf("consume with a wrong token = %v, want an unauthorized KO", err)
	}
	if err := os.WriteFile(tokenFile, []byte("right\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"consume", "-url", url, "-list", "l", "-token-file", tokenFile}, io.Discard, io.Discard); err != nil {
		t.Fatalf("consume with the right token: %v", err)
	}
}

// TestUnavailableIsRetried: a 503 from a stopping server (unavailable: nothing ran) counts as
// refused, one whose backend does not answer (the READ may have taken a line) as failed, and
// both are asked again until the list is drained.
func TestUnavailableIsRetried(t *testing.T) {
	var answered atomic.Int64
	url, st := startServerBehind(t, "", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reason := ""
			switch n := answered.Add(1); {
			case n <= 3:
				reason = protocol.ReasonUnavailable
			case n <= 5:
				reason = protocol.ReasonBackendUnavailable
			default:
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"ok":false,"command":"READ","reason":%q,"error":"retry later"}`, reason)
		})
	})
	want := testutil.Numbered("single", 100)
	st.Replace(context.Background(), "single.csv", slices.Clone(want), "")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"consume", "-url", url, "-list", "single.csv", "-print"}, &stdout, &stderr); err != nil {
		t.Fatalf("consume: %v\n%s", err, stderr.String())
	}
	if got := printed(t, stdout.String()); !slices.Equal(got, want) {
		t.Errorf("consumed %d lines, want the %d input lines in order", len(got), len(want))
	}
	if summary := stderr.String(); !strings.Contains(summary, "read=100 refused=3 failed=2") {
		t.Errorf("summary = %q, want read=100 refused=3 failed=2", summary)
	}
}

// TestUnreachableServerIsRefused: requests that never reach a server are counted apart from
// those that may have run, and repeated until -duration.
func TestUnreachableServerIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"consume", "-url", "http://" + addr, "-list", "l", "-duration", "400ms"}, io.Discard, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if s := stderr.String(); !strings.Contains(s, "read=0") || strings.Contains(s, "refused=0") || !strings.Contains(s, "failed=0") {
		t.Errorf("summary = %q, want refused requests and no failed ones", s)
	}
}

func TestFillWritesNumberedLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "datasets")
	if err := run(context.Background(), []string{"fill", "-dir", dir, "-file", "big.csv", "-prefix", "pvc", "-count", "5"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "big.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := testutil.File(testutil.Numbered("pvc", 5)); string(data) != want {
		t.Errorf("file = %q, want %q", data, want)
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"explode"},
		{"consume", "-url", "http://x:1"},
		{"consume", "-url", "ftp://x", "-list", "l"},
		{"consume", "-url", "http://x:1", "-list", "l", "-mode", "MIDDLE"},
		{"produce", "-url", "http://x:1", "-list", "l"},
		{"fill"},
		{"fill", "-dir", "d", "extra"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
}

func TestDurationEndsKeepReads(t *testing.T) {
	url, st := startServer(t, "")
	st.Replace(context.Background(), "logins", []string{"alice", "bob"}, "")
	start := time.Now()
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"consume", "-url", url, "-list", "logins", "-keep", "-mode", "RANDOM", "-duration", "300ms", "-rate", "100"}, io.Discard, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("run took %v, want about -duration", elapsed)
	}
	if n, _ := st.Length(context.Background(), "logins"); n != 2 {
		t.Errorf("KEEP=TRUE reads left %d lines, want 2", n)
	}
	if strings.Contains(stderr.String(), "read=0 ") {
		t.Errorf("summary = %q, want some reads", stderr.String())
	}
}
