package webui

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// openStream opens the overview's stream of site with the session cookie nonce and returns the
// answer, its first line read when it is a stream.
func openStream(t *testing.T, site *httptest.Server, nonce string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, site.URL+Prefix+"events", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: nonce + "."})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode == http.StatusOK {
		if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "event: view\n" {
			t.Fatalf("the stream's first line: %q, %v", line, err)
		}
	}
	return resp
}

// Live streams are bounded per server and per browser session: one over either limit is refused
// with 429, naming the limit's flag, and a stream that ends makes room. Without a token a client
// that sends no cookie is a new session each time: the server's limit is then the bound.
func TestAdversarialStreamLimits(t *testing.T) {
	u := New(Options{Store: memory.New(), Token: func() string { return "" }, Facts: func() []Fact { return nil },
		MaxStreams: 3, MaxStreamsPerSession: 2, Interval: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	site := httptest.NewServer(u)
	defer func() { u.Close(); site.Close() }()
	refused := func(resp *http.Response, flag string) {
		t.Helper()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a stream over %s: %d, want 429", flag, resp.StatusCode)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), flag) || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a stream over %s: %d %q (Retry-After %q), want 429 naming it", flag, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	a1, _ := openStream(t, site, "a"), openStream(t, site, "a")
	refused(openStream(t, site, "a"), "--ui-max-streams-per-session")
	openStream(t, site, "b")
	if got := u.Streams(); got != 3 {
		t.Fatalf("%d streams counted, want 3", got)
	}
	refused(openStream(t, site, "c"), "--ui-max-streams")
	a1.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for u.Streams() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream is still counted: %d", u.Streams())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if resp := openStream(t, site, "c"); resp.StatusCode != http.StatusOK {
		t.Fatalf("a stream once another ended: %d", resp.StatusCode)
	}
}

// countingLists counts the store's Lists calls.
type countingLists struct {
	store.Store
	calls atomic.Int64
}

func (c *countingLists) Lists(ctx context.Context) ([]store.ListInfo, error) {
	c.calls.Add(1)
	return c.Store.Lists(ctx)
}

// The sampler's cost does not grow with the streams: streams opened together wait for one sample
// of the store instead of each taking its own, and the streams of a view share one rendering of
// it a tick (here counted by the facts it asks for). Before, 50 streams opening took 50 samples,
// and each tick rendered the view 50 times.
func TestAdversarialStreamsShareTheSampling(t *testing.T) {
	lists := &countingLists{Store: memory.New()}
	if err := lists.Replace(context.Background(), "a", testutil.Numbered("x", 3), ""); err != nil {
		t.Fatal(err)
	}
	slow := make(chan struct{}) // holds the first sample until every stream has asked
	var renders atomic.Int64
	u := New(Options{Store: gatedLists{lists, slow}, Token: func() string { return "" },
		Facts:    func() []Fact { renders.Add(1); return nil },
		Interval: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	site := httptest.NewServer(u)
	defer func() { u.Close(); site.Close() }()
	const streams = 50
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, site.URL+Prefix+"events", nil)
			req.AddCookie(&http.Cookie{Name: sessionCookie, Value: "s" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "."})
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body) // read on, as a browser does, until the page closes

		})
	}
	time.Sleep(200 * time.Millisecond) // every stream is waiting for its first snapshot
	close(slow)
	time.Sleep(500 * time.Millisecond) // ten ticks
	samples, rendered := lists.calls.Load(), renders.Load()
	u.Close()
	wg.Wait()
	t.Logf("%d streams over about 10 ticks: %d samples of the store, %d renderings of the view", streams, samples, rendered)
	if samples > 15 || rendered > 15 {
		t.Errorf("%d streams took %d samples and %d renderings in about 10 ticks: the cost grows with the streams", streams, samples, rendered)
	}
}

// gatedLists holds every Lists call until open is closed.
type gatedLists struct {
	*countingLists
	open chan struct{}
}

func (g gatedLists) Lists(ctx context.Context) ([]store.ListInfo, error) {
	<-g.open
	return g.countingLists.Lists(ctx)
}
