package sts

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sts-operator/sts-operator/internal/sts/store"
)

func TestLimitsOverHTTP(t *testing.T) {
	// Room for list l full (its 3 lines, 597 bytes with their bookkeeping) and 500 bytes more,
	// not for another list of 3 lines.
	ts := startServer(t, func(c *Config) {
		c.Limits = store.Limits{MaxLinesPerList: 3, MaxTotalBytes: 1100, MaxLineBytes: 10}
		c.MaxBodyBytes = 100
	})
	lineLimit := koBody("Limit exceeded: max-line-bytes=10 !")
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=01234567890", lineLimit)
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=0123456789", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=b", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=c", okBody(""))
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=d", koBody("Limit exceeded: max-lines-per-list=3 !"))
	if status, m := ts.getJSON(t, "/sts/ADD?FILENAME=l&LINE=d", true); status != http.StatusInsufficientStorage || m["reason"] != "limit_exceeded" {
		t.Errorf("JSON, a full list: %d %v", status, m)
	}
	if status, m := ts.getJSON(t, "/sts/ADD?FILENAME=l&LINE=01234567890", true); status != http.StatusRequestEntityTooLarge || m["reason"] != "limit_exceeded" {
		t.Errorf("JSON, a line too long: %d %v", status, m)
	}

	post := func(target, body string) string {
		t.Helper()
		return ts.do(t, http.MethodPost, target, "text/plain", body).body
	}
	if got := post("/sts/LOAD?FILENAME=m&MODE=LAST", "a\nb\nc\nd\n"); got != koBody("Limit exceeded: max-lines-per-list=3 !") {
		t.Errorf("LOAD of too many lines: %q", got)
	}
	if got := post("/sts/LOAD?FILENAME=m", "0123456789\n0123456789\n0123456789\n"); got != koBody("Limit exceeded: max-total-bytes=1100 !") {
		t.Errorf("LOAD over the total: %q", got)
	}
	if got := post("/sts/LOAD?FILENAME=l&MODE=FIRST", "short\nthis line is too long\n"); got != lineLimit {
		t.Errorf("LOAD with a line too long: %q", got)
	}
	ts.expect(t, "/sts/LENGTH?FILENAME=l", okBody("3")) // a refused LOAD adds nothing
	ts.expect(t, "/sts/LENGTH?FILENAME=m", koBody("m not loaded yet !"))
	if a := ts.do(t, http.MethodPost, "/sts/LOAD?FILENAME=m", "text/plain", strings.Repeat("x\n", 51)); a.status != http.StatusRequestEntityTooLarge || a.body != koBody("Request body larger than 100 bytes !") {
		t.Errorf("a body over --max-body-bytes: %d %q", a.status, a.body)
	}

	ts.writeFile(t, "big.csv", strings.Repeat("y\n", 551)) // larger than the limit: refused before it is read
	ts.expect(t, "/sts/INITFILE?FILENAME=big.csv", koBody("Limit exceeded: max-total-bytes=1100 !"))
	ts.writeFile(t, "many.csv", "1\n2\n3\n4\n")
	ts.expect(t, "/sts/INITFILE?FILENAME=many.csv", koBody("Limit exceeded: max-lines-per-list=3 !"))
	ts.expect(t, "/sts/STATUS", "<html><title>OK</title>\n<body>\nl = 3<br />\n</body></html>")
	ts.expect(t, "/sts/READ?FILENAME=l&KEEP=FALSE", okBody("c")) // ADD defaults to FIRST
	ts.expect(t, "/sts/ADD?FILENAME=l&LINE=d", okBody(""))       // room again
}
