package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// consumer READs lines from one list with several workers.
type consumer struct {
	url, list, mode, tokenFile string
	ledger, name               string
	workers                    int
	keep, print                bool
	idle, duration, report     time.Duration
	rate                       float64

	read, refused, failed atomic.Int64
	lastRead              atomic.Int64 // UnixNano of the latest line read by any worker
}

func (c *consumer) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "url", "", "table server base `URL`, e.g. http://logins.default.svc:9191")
	fs.StringVar(&c.list, "list", "", "list `name` (FILENAME)")
	fs.StringVar(&c.mode, "mode", "FIRST", "READ_MODE: FIRST, LAST or RANDOM")
	fs.StringVar(&c.tokenFile, "token-file", "", "`file` holding the server's bearer token")
	fs.IntVar(&c.workers, "workers", 1, "concurrent readers")
	fs.BoolVar(&c.keep, "keep", false, "READ with KEEP=TRUE (lines stay in the list)")
	fs.BoolVar(&c.print, "print", false, `print every line read as "= <line>"`)
	fs.StringVar(&c.ledger, "ledger", "", "at the end, record the lines read and the summary on the table server at `URL`, as the lists <name>.lines and <name>.summary")
	fs.StringVar(&c.name, "name", "", "this consumer's name in the ledger (default: the host name, a pod's name)")
	fs.DurationVar(&c.idle, "idle", 0, "keep polling an empty list until no line came for this long (0: stop at the first empty answer)")
	fs.DurationVar(&c.duration, "duration", 0, "stop after this long (0: when the list is empty)")
	fs.DurationVar(&c.report, "report", 0, "print the counts every interval (0: only at the end)")
	fs.Float64Var(&c.rate, "rate", 0, "READs per second over all workers (0: as fast as the server answers)")
}

func (c *consumer) run(ctx context.Context, stdout, stderr io.Writer) error {
	if c.list == "" || c.workers < 1 {
		return usageError("consume needs -list and -workers >= 1")
	}
	switch c.mode {
	case "FIRST", "LAST", "RANDOM":
	default:
		return usageError(fmt.Sprintf("-mode %q: want FIRST, LAST or RANDOM", c.mode))
	}
	cl, err := newClient(c.url, c.tokenFile)
	if err != nil {
		return err
	}
	if c.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.duration)
		defer cancel()
	}
	stopReports := reportEvery(ctx, stderr, c.report, c.summary)
	c.lastRead.Store(time.Now().UnixNano())
	pace := newTicker(ctx, c.rate)
	got := make([][]string, c.workers)
	errs := make([]error, c.workers)
	var wg sync.WaitGroup
	for w := range c.workers {
		wg.Go(func() { got[w], errs[w] = c.work(ctx, cl, pace) })
	}
	wg.Wait()
	stopReports()

	lines := slices.Concat(got...)
	if c.print {
		out := bufio.NewWriter(stdout)
		for _, l := range lines {
			fmt.Fprintf(out, "= %s\n", l)
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(stderr, c.summary())
	if c.ledger != "" {
		if err := c.record(ctx, lines); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// work reads until the list is exhausted, ctx ends or the server gives a KO that no retry
// changes, and returns the lines it read. A request that failed in transport or was answered
// 503 (a server starting or stopping, or whose Redis does not answer) is repeated, as an
// injector does while a table-server pod is replaced or its backend is down.
func (c *consumer) work(ctx context.Context, cl *client, pace *ticker) ([]string, error) {
	var lines []string
	for pace.wait(ctx) {
		params := url.Values{"FILENAME": {c.list}, "READ_MODE": {c.mode}, "KEEP": {strings.ToUpper(strconv.FormatBool(c.keep))}}
		a, err := cl.call(ctx, "READ", params)
		var ko *koError
		switch {
		case err == nil && a.OK:
			var line string
			if a.Value != nil {
				line = *a.Value
			}
			lines = append(lines, line)
			c.read.Add(1)
			c.lastRead.Store(time.Now().UnixNano())
		case err == nil: // the list is exhausted
			if c.idle == 0 || time.Since(time.Unix(0, c.lastRead.Load())) >= c.idle {
				return lines, nil
			}
			pause(ctx, 50*time.Millisecond) // a producer may still add lines
		case errors.As(err, &ko):
			return lines, err
		case ctx.Err() != nil:
			return lines, nil // the planned end (-duration) or a signal
		case notRun(err):
			c.refused.Add(1)
			pause(ctx, retryDelay)
		default: // broke in flight, or a 503 after the READ may have taken its line
			c.failed.Add(1)
			pause(ctx, retryDelay)
		}
	}
	return lines, nil
}

// record stores what this consumer read on the ledger server. It is how the end-to-end suite
// learns which pod got which line: a pod's log proved lossy there (the container runtime dropped
// the tail of a pod's 85 KB of output), while a LOAD is acknowledged. The summary goes last, so
// a ledger that has it has the lines too. It gets a minute of its own even when ctx has ended.
func (c *consumer) record(ctx context.Context, lines []string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	cl, err := newClient(c.ledger, "") // a ledger takes no token
	if err != nil {
		return err
	}
	name := c.name
	if name == "" {
		if name, err = os.Hostname(); err != nil {
			return err
		}
	}
	if err := cl.load(ctx, name+".lines", lines); err != nil {
		return fmt.Errorf("recording the lines read on the ledger: %w", err)
	}
	if err := cl.load(ctx, name+".summary", []string{c.summary()}); err != nil {
		return fmt.Errorf("recording the summary on the ledger: %w", err)
	}
	return nil
}

func (c *consumer) summary() string {
	return fmt.Sprintf("stsload consume list=%s read=%d refused=%d failed=%d", c.list, c.read.Load(), c.refused.Load(), c.failed.Load())
}
