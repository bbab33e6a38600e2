package webui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// pageSize is the most rows or lines a page shows: 10 000 lists or a million lines stay a page
// of 100 to render and to send each second.
const pageSize = 100

// viewQuery is what a browser asks of the overview: a filter on the name, an order, a page.
type viewQuery struct {
	Filter string
	Sort   string // name, length, leased, reads, adds, rate, empty
	Desc   bool
	Page   int
}

func parseViewQuery(r *http.Request) viewQuery {
	q := r.URL.Query()
	v := viewQuery{Filter: q.Get("q"), Sort: q.Get("sort"), Desc: q.Get("desc") == "1"}
	if _, known := sorts[v.Sort]; !known {
		v.Sort = "name"
	}
	v.Page, _ = strconv.Atoi(q.Get("page"))
	v.Page = max(v.Page, 0)
	return v
}

// sorts order rows; ties go by name, so that rows do not swap places from one second to the next.
var sorts = map[string]func(a, b *row) int{
	"name":   func(a, b *row) int { return 0 },
	"length": func(a, b *row) int { return cmp.Compare(a.Length, b.Length) },
	"leased": func(a, b *row) int { return cmp.Compare(a.Leased, b.Leased) },
	"reads":  func(a, b *row) int { return cmp.Compare(a.Reads, b.Reads) },
	"adds":   func(a, b *row) int { return cmp.Compare(a.Adds, b.Adds) },
	"rate":   func(a, b *row) int { return cmp.Compare(a.Rate, b.Rate) },
	"empty": func(a, b *row) int {
		// Lists that never empty come last.
		ae, be := a.Empty, b.Empty
		if ae < 0 {
			ae = math.MaxInt64
		}
		if be < 0 {
			be = math.MaxInt64
		}
		return cmp.Compare(ae, be)
	},
}

// view is one browser's overview: what the template renders first and each event carries.
type view struct {
	At     string     `json:"at"`
	Error  string     `json:"error,omitempty"`
	Lists  int        `json:"lists"` // every list
	Shown  int        `json:"shown"` // lists the filter lets through
	Page   int        `json:"page"`  // 0-based
	Pages  int        `json:"pages"` // at least 1
	Rows   []viewRow  `json:"rows"`  // this page's
	Facts  []Fact     `json:"facts"` // the server's
	Stop   stopFlag   `json:"stop"`  // the STOP flag
	Query  viewQuery  `json:"-"`
	Sorts  []sortLink `json:"-"`
	Points int        `json:"-"`
}

// stopFlag is the STOP flag's state: raised while the list StopList holds a line.
type stopFlag struct {
	Raised bool `json:"raised"`
}

// viewRow is a row as shown: numbers already written out, so that the template and the script
// show the same text.
type viewRow struct {
	Name       string `json:"name"`
	Length     int    `json:"length"`
	Leased     int    `json:"leased"`
	Reads      string `json:"reads"`
	Adds       string `json:"adds"`
	Rate       string `json:"rate"`
	RateMinute string `json:"rateMinute"`
	Empty      string `json:"empty"`
	Draining   bool   `json:"draining"`
	Spark      string `json:"spark"` // the sparkline's polyline points
}

type sortLink struct {
	Key, Label string
	Active     bool
	Desc       bool
}

// view filters, sorts and pages a snapshot for one browser.
func (u *UI) view(snap *snapshot, q viewQuery) view {
	v := view{At: snap.at.Format("15:04:05"), Error: snap.err, Lists: len(snap.rows), Query: q, Points: historyPoints}
	matched := make([]*row, 0, len(snap.rows))
	filter := strings.ToLower(q.Filter)
	for i := range snap.rows {
		r := &snap.rows[i]
		if r.Name == StopList {
			v.Stop = stopFlag{Raised: r.Length > 0}
		}
		if filter == "" || strings.Contains(strings.ToLower(r.Name), filter) {
			matched = append(matched, r)
		}
	}
	by := sorts[q.Sort]
	slices.SortStableFunc(matched, func(a, b *row) int {
		c := by(a, b)
		if q.Desc {
			c = -c
		}
		if c == 0 {
			c = strings.Compare(a.Name, b.Name)
		}
		return c
	})
	v.Shown = len(matched)
	v.Pages = max(1, (len(matched)+pageSize-1)/pageSize)
	v.Page = min(q.Page, v.Pages-1)
	for _, r := range matched[min(len(matched), v.Page*pageSize):min(len(matched), (v.Page+1)*pageSize)] {
		v.Rows = append(v.Rows, viewRow{Name: r.Name, Length: r.Length, Leased: r.Leased, Reads: formatCount(r.Reads), Adds: formatCount(r.Adds),
			Rate: formatRate(r.Rate, r.HasRate), RateMinute: formatRate(r.RateMinute, r.HasRateMinute),
			Empty: formatEmpty(r.Empty), Draining: r.Empty >= 0, Spark: sparkline(r.History)})
	}
	streams := strconv.Itoa(u.streams.count())
	if u.opt.MaxStreams > 0 {
		streams += " of " + strconv.Itoa(u.opt.MaxStreams)
	}
	v.Facts = append(u.opt.Facts(), Fact{"uptime", time.Since(u.started).Round(time.Second).String()},
		Fact{"reads/s (this server)", formatCount(snap.reads)}, Fact{"adds/s (this server)", formatCount(snap.adds)},
		Fact{"live streams (this server)", streams})
	for _, s := range []struct{ key, label string }{{"name", "List"}, {"length", "Lines"}, {"leased", "Leased"}, {"reads", "Reads/s"}, {"adds", "Adds/s"}, {"rate", "Lines/s (10 s)"}, {"empty", "Empty in"}} {
		v.Sorts = append(v.Sorts, sortLink{Key: s.key, Label: s.label, Active: q.Sort == s.key, Desc: q.Sort == s.key && q.Desc})
	}
	return v
}

func formatRate(rate float64, known bool) string {
	switch {
	case !known:
		return "…"
	case math.Abs(rate) < 0.05:
		return "0"
	case math.Abs(rate) >= 100:
		return fmt.Sprintf("%+.0f", rate)
	}
	return fmt.Sprintf("%+.1f", rate)
}

// formatCount writes commands a second, "…" while unknown.
func formatCount(perSecond float64) string {
	switch {
	case perSecond < 0:
		return "…"
	case perSecond == 0:
		return "0"
	case perSecond < 10:
		return strconv.FormatFloat(perSecond, 'f', 1, 64)
	}
	return fmt.Sprintf("%.0f", perSecond)
}

func formatEmpty(d time.Duration) string {
	switch {
	case d < 0:
		return "—"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%.0fd", d.Hours()/24)
}

// sparkline returns the points of a polyline of the history in a historyPoints × 20 box, scaled
// to the history's own range, and stretched over the points the list has (since it exists, or
// since the page was first opened), so that the trend reads at once.
func sparkline(history []int) string {
	lo, hi, first := math.MaxInt, -1, -1
	for i, n := range history {
		if n < 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi < 0 {
		return ""
	}
	span := float64(len(history) - 1 - first)
	var b strings.Builder
	for i, n := range history[first:] {
		if n < 0 {
			continue
		}
		x := float64(len(history) - 1)
		if span > 0 {
			x = float64(i) * x / span
		}
		y := 10.0
		if hi > lo {
			y = 19 - 18*float64(n-lo)/float64(hi-lo)
		}
		if span == 0 { // one point: a flat line across
			fmt.Fprintf(&b, "0,%.1f ", y)
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
	}
	return strings.TrimSpace(b.String())
}

// overview renders the overview; its script then follows the events.
func (u *UI) overview(w http.ResponseWriter, r *http.Request, sess session) {
	v := u.view(u.live.current(r.Context()), parseViewQuery(r))
	msg := map[string]string{"raised": "The STOP flag is raised.", "lowered": "The STOP flag is lowered."}[r.URL.Query().Get("done")]
	u.render(w, http.StatusOK, "overview.html", page{Title: "Lists", CSRF: sess.csrf, Auth: sess.auth, Message: msg, Data: v})
}

// events streams the overview to one browser as Server-Sent Events, one "view" event per tick,
// until the browser leaves, the server stops, the browser stops reading (a write waits
// StreamWriteTimeout at most), or (with a token) the browser's session ends or the token changes:
// the browser's script then reloads the page, which asks for the token. A stream over the
// server's or the session's limit is refused (429), which the script says, asking again later.
func (u *UI) events(w http.ResponseWriter, r *http.Request, sess session) {
	release, refusal := u.streams.admit(sess.nonce, u.opt.MaxStreams, u.opt.MaxStreamsPerSession)
	if refusal != "" {
		w.Header().Set("Retry-After", strconv.Itoa(int(streamRetry/time.Second)))
		http.Error(w, refusal, http.StatusTooManyRequests)
		return
	}
	defer release()
	q := parseViewQuery(r)
	rc := http.NewResponseController(w)
	// The server's read timeout would end the stream: a stream reads nothing.
	_ = rc.SetReadDeadline(time.Time{})
	conn := tcpConn(r.Context())
	if conn != nil {
		_ = conn.SetWriteBuffer(streamSendBuffer)
	}
	ch, ok := u.live.watch(r.Context())
	if !ok {
		http.Error(w, "the server is stopping", http.StatusServiceUnavailable)
		return
	}
	defer u.live.unwatch(ch)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for {
		select {
		case <-r.Context().Done():
			return
		case snap, open := <-ch:
			if !open {
				return
			}
			if token := u.opt.Token(); token != "" {
				if _, ok := u.cookieSession(r, token); !ok {
					return
				}
			}
			data := snap.event(q, func() []byte {
				v, _ := json.Marshal(u.view(snap, q))
				return fmt.Appendf(nil, "event: view\ndata: %s\n\n", v)
			})
			_ = rc.SetWriteDeadline(time.Now().Add(u.opt.StreamWriteTimeout))
			if _, err := w.Write(data); err != nil || rc.Flush() != nil {
				if conn != nil {
					// What the browser left unread goes with the connection, now, rather than
					// while the kernel tries to deliver it.
					_ = conn.SetLinger(0)
				}
				return
			}
		}
	}
}

// streamRetry is when a browser refused a stream asks again.
const streamRetry = 30 * time.Second

// stopFlag raises the STOP flag (adds a line to the list StopList, once) or lowers it (RESET).
func (u *UI) stopFlag(w http.ResponseWriter, r *http.Request, sess session) {
	var out Outcome
	done := "raised"
	if r.PostFormValue("flag") == "lower" {
		out, done = u.opt.Protocol.Run(r.Context(), protocol.CmdReset, map[string]string{"FILENAME": StopList}, nil), "lowered"
	} else {
		out = u.opt.Protocol.Run(r.Context(), protocol.CmdAdd, map[string]string{"FILENAME": StopList, "LINE": StopList, "ADD_MODE": "LAST", "UNIQUE": "TRUE"}, nil)
		if !out.OK && out.Status == http.StatusConflict { // already raised
			out.OK = true
		}
	}
	if !out.OK {
		u.fail(w, r, sess, out.Status, out.Text)
		return
	}
	http.Redirect(w, r, Prefix+"?done="+done, http.StatusSeeOther)
}
