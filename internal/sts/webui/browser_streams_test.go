package webui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// A browser whose live stream the server refuses (over --ui-max-streams here) says so on the
// overview, naming the limit, and stays put: the script reloaded the page every 2 s on any
// refused stream, which against a full server would never end.
func TestAPageOverTheStreamLimitSaysSo(t *testing.T) {
	s := startSite(t, "memory", map[string][]string{"logins.csv": testutil.Numbered("line", 3)},
		func(c *sts.Config) { c.PageMaxStreams = 1 })
	first := newTab(t)
	do(t, first, "open the overview", chromedp.Navigate(s.url+"/ui/"))
	waitFor(t, first, "the live stream", `document.getElementById("live").innerText.startsWith("live at")`)

	second := newTab(t)
	do(t, second, "open the overview a second time", chromedp.Navigate(s.url+"/ui/"))
	eval[bool](t, second, `window.notReloaded = true`)
	waitFor(t, second, "the refusal", `document.getElementById("live").innerText.includes("--ui-max-streams")`)
	time.Sleep(3 * time.Second) // longer than the script's reload delay
	if !eval[bool](t, second, `window.notReloaded === true && document.getElementById("live").innerText.startsWith("not live")`) {
		t.Fatalf("the refused page reloaded or lost its message: %q", text(t, second, "#live"))
	}
}
