package webui_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// TestScreenshots takes the README's pictures of the page (make screenshots writes them into
// docs/ui through STS_SCREENSHOTS_DIR) during a short drain, so that the overview has rates,
// sparklines and times to empty; without the variable they go to a temporary directory and are
// only checked to be pictures of the page.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("STS_SCREENSHOTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	lines := testutil.Numbered("user", 20_000)
	lines[3] = `<script>alert("a line is text")</script>`
	s := startSite(t, "memory", map[string][]string{
		"logins.csv": lines, "coupons.csv": testutil.Numbered("coupon", 5_000), "orders.queue": testutil.Numbered("order", 800),
		"vouchers.csv": testutil.Numbered("voucher", 1_200),
	}, func(c *sts.Config) { c.PageInterval = 40 * time.Millisecond })
	tab := newTab(t)
	do(t, tab, "open the overview", chromedp.EmulateViewport(1280, 720), chromedp.Navigate(s.url+"/ui/"))
	// The injectors: logins read and kept, coupons and orders consumed at different speeds.
	for tick := range 100 {
		s.get(t, "/sts/READMULTI?FILENAME=coupons.csv&NB_LINES=20&KEEP=FALSE")
		s.get(t, "/sts/READMULTI?FILENAME=orders.queue&NB_LINES=5&KEEP=FALSE")
		if tick%3 == 0 {
			s.get(t, "/sts/ADD?FILENAME=orders.queue&LINE=order-new&ADD_MODE=LAST")
		}
		time.Sleep(30 * time.Millisecond)
	}
	waitFor(t, tab, "rates on the overview", `document.querySelector("#rows tr td.draining") !== null`)
	waitFor(t, tab, "the coupons' reads a second", `+[...document.querySelectorAll("#rows tr")].find(r => r.dataset.name === "coupons.csv")?.children[3].innerText > 0`)
	waitFor(t, tab, "this server's reads a second", `[...document.querySelectorAll("#facts div")].some(d => d.firstChild.innerText === "reads/s (this server)" && +d.lastChild.innerText > 0)`)
	shoot(t, tab, filepath.Join(dir, "overview.png"))
	do(t, tab, "open a list", chromedp.Navigate(s.url+"/ui/lists/logins.csv"))
	waitFor(t, tab, "the list page", `document.querySelectorAll("#page-lines tr").length === 100`)
	shoot(t, tab, filepath.Join(dir, "list.png"))
}

// shoot writes a PNG of the tab's viewport, checking that it is one of the viewport's size.
func shoot(t *testing.T, tab context.Context, path string) {
	t.Helper()
	shot, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() != 1280 {
		t.Fatalf("the screenshot is no PNG of the page: %v", err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
}
