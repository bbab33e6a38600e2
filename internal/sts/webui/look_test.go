package webui_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// darkScheme makes the tab's pages see prefers-color-scheme: dark, as a browser set to dark does.
func darkScheme(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
	_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
	return chromedp.Void{}, err
}

// The page follows the browser's dark setting, and the overview is sorted from the keyboard:
// the column headers are buttons, which take the focus and Enter presses.
func TestDarkModeAndKeyboard(t *testing.T) {
	s := startSite(t, "memory", map[string][]string{"short": {"a"}, "long": {"a", "b", "c"}})
	tab := newTab(t)
	do(t, tab, "open the overview", chromedp.Navigate(s.url+"/ui/"))
	light := eval[string](t, tab, `getComputedStyle(document.body).backgroundColor`)
	do(t, tab, "go dark", darkScheme)
	if dark := eval[string](t, tab, `getComputedStyle(document.body).backgroundColor`); dark != "rgb(13, 17, 23)" || light != "rgb(255, 255, 255)" {
		t.Fatalf("backgrounds: light %s, dark %s", light, dark)
	}
	waitFor(t, tab, "rows by name", `[...document.querySelectorAll("#rows tr")].map(r => r.dataset.name).join() === "long,short"`)
	do(t, tab, "sort by lines from the keyboard", chromedp.Focus(chromedp.CSS(`button.sort[data-sort="length"]`)), chromedp.KeyEvent("\r"))
	waitFor(t, tab, "rows by length", `[...document.querySelectorAll("#rows tr")].map(r => r.dataset.name).join() === "short,long"`)
	do(t, tab, "again: descending", chromedp.KeyEvent("\r"))
	waitFor(t, tab, "rows by length, descending", `[...document.querySelectorAll("#rows tr")].map(r => r.dataset.name).join() === "long,short"`)
}

// 10 000 lists stay usable: the overview sends and shows a page of 100, pages on, and the filter
// finds one list among them.
func TestOverviewOfTenThousandLists(t *testing.T) {
	lists := make(map[string][]string, 10_000)
	for i := range 10_000 {
		lists[fmt.Sprintf("list-%05d", i)] = []string{"a"}
	}
	s := startSite(t, "memory", lists)
	tab := newTab(t)
	do(t, tab, "open the overview", chromedp.Navigate(s.url+"/ui/"))
	waitFor(t, tab, "the first page", `document.getElementById("count").innerText === "10000 of 10000 lists" && document.querySelectorAll("#rows tr").length === 100`)
	click(t, tab, "#next")
	waitFor(t, tab, "the second page", `document.getElementById("pageinfo").innerText === "page 2 of 100" && document.querySelector("#rows tr").dataset.name === "list-00100"`)
	do(t, tab, "filter", chromedp.SendKeys(chromedp.CSS("#filter"), "list-09876"))
	waitFor(t, tab, "one list", `document.getElementById("count").innerText === "1 of 10000 lists" && document.querySelector("#rows tr").dataset.name === "list-09876"`)
}
