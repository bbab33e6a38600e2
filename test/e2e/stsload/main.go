// Command stsload drives a table server from inside a cluster the way JMeter injectors do. The
// end-to-end suite (test/e2e) runs it in Jobs and checks what it recorded; `make demo` runs it as
// the demo's load. It ships as its own image (hack/cluster builds it), because the project's
// image holds only /manager and /sts.
//
//	stsload consume -url URL -list NAME [-workers N] [-mode FIRST|LAST|RANDOM] [-keep]
//	                [-idle D] [-duration D] [-rate R] [-print] [-report D] [-token-file F]
//	                [-ledger URL [-name NAME]]
//	stsload produce -url URL -list NAME -count N -prefix P [-rate R] [-report D] [-token-file F]
//	stsload fill -dir DIR [-owner UID] [-file NAME -count N -prefix P]
//
// consume READs until the list is empty (-idle: until it stayed empty that long), prints each
// line it got as "= <line>" on stdout when -print is set, and ends with one summary line on
// stderr: "stsload consume list=NAME read=N refused=N failed=N". With -ledger it then LOADs the
// lines it got and that summary into the lists <name>.lines and <name>.summary of a second table
// server (<name>: -name, by default the host name, which in a pod is the pod's name), where the
// suite reads them back. refused counts requests that
// no server ran (retried): they never reached one, or a starting or stopping server answered
// them HTTP 503 unavailable; failed those that broke after being sent or were answered another
// 503, such as backend_unavailable while Redis is down (retried too; the line such a request
// consumed, if any, is lost, never handed out twice). Any other KO ends the run. produce ADDs the lines
// "<prefix>-000000", "<prefix>-000001", ... LAST, in order. fill writes the same lines into a
// file, for datasets on a volume, and hands DIR to the table server's user.
//
// Every call uses the protocol's JSON form and POST, which Go's HTTP client never repeats on
// its own: a READ KEEP=FALSE sent twice would consume two lines.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "stsload:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "stsload:", err)
		os.Exit(1)
	}
}

// usageError is a command line that cannot run.
type usageError string

func (e usageError) Error() string { return string(e) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("want a command: consume, produce or fill")
	}
	fs := flag.NewFlagSet("stsload "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	parse := func() error {
		if err := fs.Parse(args[1:]); err != nil {
			return usageError(err.Error())
		}
		if fs.NArg() > 0 {
			return usageError(fmt.Sprintf("unexpected arguments %q", fs.Args()))
		}
		return nil
	}
	switch args[0] {
	case "consume":
		var c consumer
		c.flags(fs)
		if err := parse(); err != nil {
			return err
		}
		return c.run(ctx, stdout, stderr)
	case "produce":
		var p producer
		p.flags(fs)
		if err := parse(); err != nil {
			return err
		}
		return p.run(ctx, stderr)
	case "fill":
		var f filler
		f.flags(fs)
		if err := parse(); err != nil {
			return err
		}
		return f.run()
	default:
		return usageError(fmt.Sprintf("unknown command %q: want consume, produce or fill", args[0]))
	}
}

// reportEvery prints summary() to w every interval (none when interval is 0) until ctx ends or
// the returned stop is called.
func reportEvery(ctx context.Context, w io.Writer, interval time.Duration, summary func() string) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	ctx, stop = context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fmt.Fprintln(w, summary())
			}
		}
	}()
	return stop
}

// line is the i-th line that produce and fill write with prefix: the i-th of
// testutil.Numbered(prefix, ...), which the e2e suite expects and this package's tests compare
// produce and fill against.
func line(prefix string, i int) string { return fmt.Sprintf("%s-%06d", prefix, i) }
