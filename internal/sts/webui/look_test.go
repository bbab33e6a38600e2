package webui_test

import (
	"context"
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
