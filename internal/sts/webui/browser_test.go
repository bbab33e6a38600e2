package webui_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sts-operator/sts-operator/internal/redistest"
	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/store/memory"
	redisstore "github.com/sts-operator/sts-operator/internal/sts/store/redis"
	"github.com/sts-operator/sts-operator/internal/sts/store/redis/redisstoretest"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The browser tests drive Debian's Chromium, headless, through chromedp: one browser for the
// test binary, a new tab per test.

// browser is the test binary's Chromium, started by the first test that needs it.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// chromiumFlags are those that work on a machine without internet: without the flags that stop
// background networking, Chromium waits on requests that never return.
func chromiumFlags(path, profile string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.UserDataDir(profile),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1280, 900))
}

// newTab opens a tab of the shared browser for one test, closed when it ends. It skips only when
// STS_SKIP_BROWSER=1, and fails when Chromium is missing.
func newTab(t testing.TB) context.Context {
	t.Helper()
	if os.Getenv("STS_SKIP_BROWSER") == "1" {
		testutil.Skip(t, "STS_SKIP_BROWSER=1: the web page's browser tests are skipped")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: apt-get install chromium (or set STS_SKIP_BROWSER=1 to skip the web page's browser tests)")
	}
	browser.once.Do(func() {
		profile, err := os.MkdirTemp("", "sts-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumFlags(path, profile)...)
		ctx, cancel := chromedp.NewContext(alloc)
		browser.ctx = ctx
		browser.cancel = func() { cancel(); cancelAlloc(); _ = os.RemoveAll(profile) }
		browser.err = chromedp.Do(ctx) // starts the browser
	})
	if browser.err != nil {
		t.Fatalf("chromium did not start: %v", browser.err)
	}
	// A browser context of its own: no cookie of another test's server on 127.0.0.1.
	tab, cancel := chromedp.NewContext(browser.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tab, cancelTimeout := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(cancelTimeout)
	return tab
}

// backends are the stores the tests run on: the page must work the same on both.
var backends = []string{"memory", "redis"}

// site is a real table server with its web page on a loopback port.
type site struct {
	url   string
	srv   *sts.Server
	store store.Store
}

// startSite serves a table server on backend with lists loaded; configure adjusts its
// configuration.
func startSite(t testing.TB, backend string, lists map[string][]string, configure ...func(*sts.Config)) *site {
	t.Helper()
	cfg := sts.DefaultConfig()
	cfg.DatasetDir = t.TempDir()
	for _, c := range configure {
		c(&cfg)
	}
	var st store.Store
	switch backend {
	case "memory":
		st = memory.New(memory.WithLimits(cfg.Limits))
	case "redis":
		st = redisstoretest.Open(t, redistest.Start(t).URL(), redisstore.Options{Limits: cfg.Limits})
	}
	for name, lines := range lists {
		// Replace owns the slice it is given: the test keeps its own.
		if err := st.Replace(context.Background(), name, slices.Clone(lines), ""); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := sts.NewServer(cfg, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.LoadAtStartup(context.Background())
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Drain(); hs.Close() })
	return &site{url: hs.URL, srv: srv, store: st}
}

// get sends a protocol request, as an injector would, and returns the body.
func (s *site) get(t testing.TB, target string) string {
	t.Helper()
	resp, err := http.Get(s.url + target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (s *site) lines(t testing.TB, name string) []string {
	t.Helper()
	lines, err := s.store.Lines(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// do runs browser actions, failing the test with what it was doing.
func do(t testing.TB, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tab, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates JavaScript in the tab.
func eval[T any](t testing.TB, tab context.Context, expression string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("%s: %v", expression, err)
	}
	return v
}

// waitFor waits until the JavaScript condition holds in the tab. It asks again after an error,
// since a form's submission replaces the page that the condition is evaluated in.
func waitFor(t testing.TB, tab context.Context, what, condition string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var holds bool
		if holds, err = chromedp.Run(tab, chromedp.Evaluate[bool]("Boolean("+condition+")")); err == nil && holds {
			return
		}
	}
	body, _ := chromedp.Run(tab, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	t.Fatalf("waiting for %s (%s): last error %v; the page shows:\n%s", what, condition, err, body)
}

// click clicks the element sel with the mouse once it is there: after a navigation, chromedp's
// view of the document may lag behind the new page for a moment.
func click(t testing.TB, tab context.Context, sel string) {
	t.Helper()
	waitFor(t, tab, sel, "document.querySelector("+jsString(sel)+") !== null")
	var err error
	for range 20 {
		if err = chromedp.Do(tab, chromedp.Click(chromedp.CSS(sel))); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("click %s: %v", sel, err)
}

// text is the visible text of the element sel.
func text(t testing.TB, tab context.Context, sel string) string {
	t.Helper()
	return eval[string](t, tab, "document.querySelector("+jsString(sel)+")?.innerText ?? ''")
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
