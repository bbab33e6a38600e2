package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"sync/atomic"
	"time"
)

// producer ADDs numbered lines LAST, one after the other, so a queue keeps their order.
type producer struct {
	url, list, prefix, tokenFile string
	count                        int
	rate                         float64
	report                       time.Duration

	added, refused atomic.Int64
}

func (p *producer) flags(fs *flag.FlagSet) {
	fs.StringVar(&p.url, "url", "", "table server base `URL`, e.g. http://queue.default.svc:9191")
	fs.StringVar(&p.list, "list", "", "list `name` (FILENAME); ADD creates it")
	fs.StringVar(&p.prefix, "prefix", "", "line prefix: the lines are <prefix>-000000, <prefix>-000001, ...")
	fs.StringVar(&p.tokenFile, "token-file", "", "`file` holding the server's bearer token")
	fs.IntVar(&p.count, "count", 0, "number of lines to add")
	fs.Float64Var(&p.rate, "rate", 0, "ADDs per second (0: as fast as the server answers)")
	fs.DurationVar(&p.report, "report", 0, "print the counts every interval (0: only at the end)")
}

// run adds every line once. A request that no server ran is repeated (see notRun); one that
// broke after it was sent, or was answered 503 after it may have run, ends the run, since
// repeating it could add the line twice.
func (p *producer) run(ctx context.Context, stderr io.Writer) error {
	if p.list == "" || p.prefix == "" || p.count < 0 {
		return usageError("produce needs -list, -prefix and -count >= 0")
	}
	cl, err := newClient(p.url, p.tokenFile)
	if err != nil {
		return err
	}
	stopReports := reportEvery(ctx, stderr, p.report, p.summary)
	defer stopReports()
	pace := newTicker(ctx, p.rate)
	for int(p.added.Load()) < p.count && pace.wait(ctx) {
		next := line(p.prefix, int(p.added.Load()))
		_, err := cl.call(ctx, "ADD", url.Values{"FILENAME": {p.list}, "LINE": {next}, "ADD_MODE": {"LAST"}})
		switch {
		case err == nil:
			p.added.Add(1)
		case notRun(err) && ctx.Err() == nil:
			p.refused.Add(1)
			pause(ctx, retryDelay)
		default:
			return fmt.Errorf("adding %s after %d lines: %w", next, p.added.Load(), err)
		}
	}
	stopReports()
	fmt.Fprintln(stderr, p.summary())
	if int(p.added.Load()) < p.count {
		return errors.New("stopped before every line was added")
	}
	return nil
}

func (p *producer) summary() string {
	return fmt.Sprintf("stsload produce list=%s added=%d refused=%d", p.list, p.added.Load(), p.refused.Load())
}
