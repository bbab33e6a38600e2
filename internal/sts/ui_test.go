package sts

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/version"
)

// GET / answers a short page that says what the server is and where to go, with the headers of
// every HTML answer, even with a token (it shows no data); other methods on / stay unknown
// commands, as in the original.
func TestIndexPage(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.AuthToken = "tok" })
	a := ts.do(t, http.MethodGet, "/", "", "")
	ts.checkCommandAnswer(t, "/", a)
	if a.header.Get("Content-Security-Policy") != "default-src 'none'; sandbox" || a.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET / without the HTML answers' headers: %v", a.header)
	}
	for _, want := range []string{"HTTP Simple Table Server", "/sts/COMMAND?FILENAME=&lt;list&gt;", `href="/ui/"`, `href="/sts/STATUS"`,
		`href="/metrics"`, `href="/healthz"`, `href="/sts/"`, "version " + version.Version} {
		if !strings.Contains(a.body, want) {
			t.Errorf("GET / lacks %q:\n%s", want, a.body)
		}
	}
	if h := ts.do(t, http.MethodHead, "/", "", ""); h.status != http.StatusOK || h.body != "" {
		t.Errorf("HEAD /: %d %q", h.status, h.body)
	}
	if p := ts.do(t, http.MethodPost, "/", "", "", "Authorization", "Bearer tok"); p.body != koBody("unknown command !") {
		t.Errorf("POST /: %q", p.body)
	}
	off := startServer(t, func(c *Config) { c.NoWebUI = true })
	if body := off.do(t, http.MethodGet, "/", "", "").body; strings.Contains(body, "/ui/") {
		t.Errorf("GET / links the web page that is turned off:\n%s", body)
	}
	if body := off.do(t, http.MethodGet, "/ui/", "", "").body; body != koBody("unknown command !") {
		t.Errorf("/ui/ with the page off: %q", body)
	}
}

// A graceful stop ends the web page's live streams at once: a browser left open on the overview
// must not hold the shutdown until its timeout.
func TestDrainEndsTheWebPageStreams(t *testing.T) {
	ts := startServer(t)
	resp, err := http.Get(ts.base + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || first != "event: view\n" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the stream began with %q, %v (%s)", first, err, resp.Header.Get("Content-Type"))
	}
	ts.srv.Drain()
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream outlived Drain")
	}
}

// The web page's reads and adds a second come from the server's counts per list: the reads
// (READ, READMULTI, FIND) and adds (ADD, LOAD) answered OK, through the protocol or the page.
func TestActivityCountsEachListsReadsAndAdds(t *testing.T) {
	ts := startServer(t)
	ts.loadList(t, "a.txt", "1", "2", "3", "4")
	for _, target := range []string{
		"/sts/READ?FILENAME=a.txt", "/sts/READ?FILENAME=a.txt&KEEP=FALSE", "/sts/READMULTI?FILENAME=a.txt&NB_LINES=2",
		"/sts/FIND?FILENAME=a.txt&LINE=3", "/sts/ADD?FILENAME=b.txt&LINE=x", "/sts/ADD?FILENAME=b.txt&LINE=y",
		"/sts/READ?FILENAME=none.txt", "/sts/FIND?FILENAME=a.txt&LINE=nothing", "/sts/LENGTH?FILENAME=a.txt",
	} {
		ts.get(t, target)
	}
	pageProtocol{ts.srv}.Run(t.Context(), protocol.CmdAdd, map[string]string{"FILENAME": "b.txt", "LINE": "z"}, nil)
	for list, want := range map[string][2]int64{"a.txt": {4, 0}, "b.txt": {0, 3}, "none.txt": {0, 0}} {
		if reads, adds := ts.srv.activity.of(list); reads != want[0] || adds != want[1] {
			t.Errorf("%s: %d reads and %d adds counted, want %v", list, reads, adds, want)
		}
	}
}
