package webui_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sts-operator/sts-operator/internal/sts"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// rowLength is the Lines cell of list name on the overview, "" while it is not shown.
func rowLength(name string) string {
	return `([...document.querySelectorAll("#rows tr")].find(r => r.dataset.name === ` + jsString(name) + `)?.children[1].innerText ?? "")`
}

// The overview shows every list with its length, and follows an ADD made through the protocol
// without a reload (Server-Sent Events).
func TestOverviewFollowsTheLists(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := startSite(t, backend, map[string][]string{"logins.csv": testutil.Numbered("line", 3), "coupons": testutil.Numbered("line", 1)})
			tab := newTab(t)
			do(t, tab, "open the overview", chromedp.Navigate(s.url+"/ui/"))
			waitFor(t, tab, "the lists", rowLength("logins.csv")+` === "3" && `+rowLength("coupons")+` === "1"`)
			waitFor(t, tab, "the live stream", `document.getElementById("live").innerText.startsWith("live at")`)
			s.get(t, "/sts/ADD?FILENAME=coupons&LINE=new")
			s.get(t, "/sts/ADD?FILENAME=queue&LINE=first")
			waitFor(t, tab, "the ADDs shown live", rowLength("coupons")+` === "2" && `+rowLength("queue")+` === "1"`)
			if got := eval[string](t, tab, `location.pathname`); got != "/ui/" {
				t.Fatalf("the page reloaded to %s", got)
			}
			// The filter keeps only the names that hold it.
			do(t, tab, "filter", chromedp.SendKeys(chromedp.CSS("#filter"), "coup"))
			waitFor(t, tab, "the filtered rows", `document.querySelectorAll("#rows tr").length === 1 && `+rowLength("coupons")+` === "2"`)
		})
	}
}

// The list page pages a list by position without consuming it, searches it with FIND's modes
// in place, adds a line, and shows a line holding a script as text.
func TestListPageBrowsesSearchesAndAdds(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			lines := testutil.Numbered("line", 250)
			lines[1] = `<script>window.pwned = 1</script><b>bold</b>`
			s := startSite(t, backend, map[string][]string{"data.csv": lines})
			tab := newTab(t)
			do(t, tab, "open the list", chromedp.Navigate(s.url+"/ui/lists/data.csv"))
			waitFor(t, tab, "the first page", `document.querySelectorAll("#page-lines tr").length === 100`)
			if got := text(t, tab, "#page-lines tr:nth-child(2) td"); got != lines[1] {
				t.Fatalf("line 2 shows %q, want the text %q", got, lines[1])
			}
			if eval[bool](t, tab, `"pwned" in window || document.querySelector("#page-lines b") !== null`) {
				t.Fatal("a line's markup was run or rendered")
			}
			click(t, tab, "#next-page")
			waitFor(t, tab, "lines 101-200", `document.querySelector("#page-lines tr th")?.innerText === "101"`)
			if got := text(t, tab, "#page-lines tr td"); got != lines[100] {
				t.Fatalf("position 101 shows %q", got)
			}
			do(t, tab, "go to line 245", chromedp.SetValue(chromedp.CSS("#at"), "245"), chromedp.Submit(chromedp.CSS("#at")))
			waitFor(t, tab, "lines 245-250", `document.querySelector("#page-lines tr th")?.innerText === "245" && document.querySelectorAll("#page-lines tr").length === 6`)
			if got := s.lines(t, "data.csv"); !slices.Equal(got, lines) {
				t.Fatal("browsing changed the list")
			}

			do(t, tab, "search", chromedp.SendKeys(chromedp.CSS("#q"), `line-0002\d\d`), chromedp.SetValue(chromedp.CSS("#mode"), "REGEX_MATCH"),
				chromedp.Click(chromedp.CSS(`#search button`)))
			waitFor(t, tab, "the hits", `document.querySelectorAll("#results tr").length === 50`)
			if got := text(t, tab, "#results tr td"); got != lines[200] {
				t.Fatalf("the first hit is %q", got)
			}
			if got := s.lines(t, "data.csv"); !slices.Equal(got, lines) {
				t.Fatal("searching moved lines")
			}

			do(t, tab, "add", chromedp.SendKeys(chromedp.CSS("#line"), "added first"), chromedp.SetValue(chromedp.CSS("#where"), "FIRST"),
				chromedp.Click(chromedp.CSS(`#add button`)))
			waitFor(t, tab, "the added line", `document.getElementById("length")?.innerText === "251" && document.querySelector("#page-lines tr td")?.innerText === "added first"`)
			// A unique add of a line already there is refused with the protocol's message.
			do(t, tab, "add again", chromedp.SendKeys(chromedp.CSS("#line"), lines[7]))
			eval[bool](t, tab, `document.getElementById("unique").checked = true`)
			click(t, tab, "#add button")
			waitFor(t, tab, "the refusal", `document.querySelector(".error")?.innerText.includes("already exists")`)
			if got := len(s.lines(t, "data.csv")); got != 251 {
				t.Fatalf("the list has %d lines after a refused add", got)
			}
		})
	}
}

// An upload LOADs a file; one that is not text, or too large, loads nothing and says why. The
// download link answers EXPORT; RESET asks first, naming the list and its length.
func TestListPageUploadDownloadReset(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := startSite(t, backend, map[string][]string{"data.csv": testutil.Numbered("line", 3)}, func(c *sts.Config) { c.MaxBodyBytes = 1000 })
			dir := t.TempDir()
			write := func(name string, content []byte) string {
				path := filepath.Join(dir, name)
				if err := os.WriteFile(path, content, 0o600); err != nil {
					t.Fatal(err)
				}
				return path
			}
			tab := newTab(t)
			upload := func(path, mode string) {
				t.Helper()
				do(t, tab, "upload "+path, chromedp.Navigate(s.url+"/ui/lists/data.csv"),
					chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{path}), chromedp.SetValue(chromedp.CSS("#load-mode"), mode),
					chromedp.Click(chromedp.CSS(`#upload button`)))
			}
			upload(write("more.txt", []byte("x\ny\n")), "LAST")
			waitFor(t, tab, "the load", `document.querySelector(".message")?.innerText === "Loaded 2 lines."`)
			want := append(testutil.Numbered("line", 3), "x", "y")
			if got := s.lines(t, "data.csv"); !slices.Equal(got, want) {
				t.Fatalf("after the upload: %q", got)
			}
			upload(write("binary.bin", []byte("a\x00\xff\xfe")), "REPLACE")
			waitFor(t, tab, "the charset refusal", `document.querySelector(".error")?.innerText.includes("not text in UTF-8")`)
			upload(write("big.txt", []byte(strings.Repeat("z\n", 600))), "REPLACE")
			waitFor(t, tab, "the size refusal", `document.querySelector(".error")?.innerText.includes("--max-body-bytes")`)
			if got := s.lines(t, "data.csv"); !slices.Equal(got, want) {
				t.Fatalf("a refused upload changed the list: %q", got)
			}

			got, err := chromedp.Run(tab, chromedp.Evaluate[string](`fetch(document.getElementById("export").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
			if err != nil || got != strings.Join(want, "\n")+"\n" {
				t.Fatalf("the download = %q, %v", got, err)
			}

			click(t, tab, "#reset")
			waitFor(t, tab, "the confirmation", `document.getElementById("confirm-text")?.innerText === "Empty the list data.csv? It holds 5 lines now; they cannot be brought back."`)
			if len(s.lines(t, "data.csv")) != 5 {
				t.Fatal("asking to reset emptied the list")
			}
			click(t, tab, "#reset-confirm")
			waitFor(t, tab, "the empty list", `document.getElementById("length")?.innerText === "0"`)
			if got := s.lines(t, "data.csv"); len(got) != 0 {
				t.Fatalf("after RESET: %q", got)
			}
		})
	}
}

// A huge line is shown cut, with its length and a link that downloads it whole; an unknown list
// is a 404 page with a way back.
func TestHugeLineAndUnknownList(t *testing.T) {
	huge := strings.Repeat("é", 50_000) // 100 000 bytes
	s := startSite(t, "memory", map[string][]string{"big": {"small", huge}})
	tab := newTab(t)
	do(t, tab, "open the list", chromedp.Navigate(s.url+"/ui/lists/big"))
	waitFor(t, tab, "the cut line", `document.querySelector("#page-lines tr:nth-child(2) .cut")?.innerText.includes("100000 bytes")`)
	if shown := eval[int](t, tab, `document.querySelector("#page-lines tr:nth-child(2) td").firstChild.textContent.length`); shown > 300 {
		t.Fatalf("the huge line shows %d characters", shown)
	}
	whole, err := chromedp.Run(tab, chromedp.Evaluate[string](`fetch(document.querySelector("#page-lines tr:nth-child(2) .cut a").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil || whole != huge {
		t.Fatalf("the downloaded line has %d bytes, %v; want %d", len(whole), err, len(huge))
	}

	resp, err := chromedp.Run(tab, chromedp.NavigateResponse(s.url+"/ui/lists/"+url.PathEscape("no such/list")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 404 || !strings.Contains(text(t, tab, "main"), `There is no list named "no such/list".`) ||
		eval[string](t, tab, `document.querySelector("main a").getAttribute("href")`) != "/ui/" {
		t.Fatalf("an unknown list: %d, %q", resp.Status, text(t, tab, "main"))
	}
}

// With a token, the page shows nothing before the token is given, keeps it in an HttpOnly cookie,
// and refuses a change that does not carry the form's CSRF token.
func TestTokenFlow(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			s := startSite(t, backend, map[string][]string{"secret-list": {"secret line"}}, func(c *sts.Config) { c.AuthToken = "s3cret" })
			tab := newTab(t)
			for _, path := range []string{"/ui/", "/ui/lists/secret-list"} {
				do(t, tab, "open "+path, chromedp.Navigate(s.url+path))
				waitFor(t, tab, "the login form", `document.getElementById("token") !== null`)
				if body := text(t, tab, "body"); strings.Contains(body, "secret") {
					t.Fatalf("%s shows data without the token: %q", path, body)
				}
			}
			events, err := chromedp.Run(tab, chromedp.Evaluate[int](`fetch("/ui/events").then(r => r.status)`, chromedp.EvalAwaitPromise))
			if err != nil || events != 401 {
				t.Fatalf("the event stream without the token: %d, %v", events, err)
			}
			do(t, tab, "a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "guess"), chromedp.Click(chromedp.CSS("form button")))
			waitFor(t, tab, "the refusal", `document.querySelector(".error")?.innerText === "That is not the server's token."`)
			do(t, tab, "the token", chromedp.SendKeys(chromedp.CSS("#token"), "s3cret"), chromedp.Click(chromedp.CSS("form button")))
			waitFor(t, tab, "the list page after login", `document.querySelector("#page-lines td")?.innerText === "secret line"`)
			if cookies := eval[string](t, tab, `document.cookie`); cookies != "" {
				t.Fatalf("a script can read the session cookie: %q", cookies)
			}
			status, err := chromedp.Run(tab, chromedp.Evaluate[int](`fetch(location.pathname, {method: "POST", body: new URLSearchParams({action: "reset"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
			if err != nil || status != 403 {
				t.Fatalf("a RESET without the CSRF token: %d, %v", status, err)
			}
			if got := s.lines(t, "secret-list"); len(got) != 1 {
				t.Fatalf("a change without the CSRF token ran: %q", got)
			}
			do(t, tab, "open the overview", chromedp.Navigate(s.url+"/ui/"))
			click(t, tab, "#stop-raise")
			waitFor(t, tab, "STOP raised", `document.getElementById("stop-state")?.innerText === "raised"`)
			if got := s.get(t, "/sts/LENGTH?FILENAME=STOP&TOKEN=s3cret"); got != testutil.OKBody("1") {
				t.Fatalf("LENGTH of STOP after raising: %s", got)
			}
		})
	}
}
