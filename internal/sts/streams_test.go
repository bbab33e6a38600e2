package sts

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fullAttacks says to run the adversarial tests at the size (make adversarial sets
// STS_ADVERSARIAL=1); make test runs them smaller, to stay fast.
var fullAttacks = os.Getenv("STS_ADVERSARIAL") == "1"

// Browsers that open the overview's live stream and never read are dropped once a write has
// waited --ui-stream-write-timeout, their unsent bytes with them, while LENGTH keeps answering:
// the probe kept 100 such streams past every timeout, and 1 000 of them held 1.43 GB of
// send queues. Each event here is a page of 100 rows of 900-byte names (about 110 KB), so that
// a stream's socket buffers (64 KiB asked, the kernel doubles it, plus the client's window)
// fill within three ticks; the stream is then dropped within the write timeout. make adversarial
// opens 1 000 streams (make test 50) and requires LENGTH's p99 within 50 ms meanwhile.
func TestAdversarialNonReadingStreamsAreDropped(t *testing.T) {
	streams, writeTimeout := 50, time.Second
	if fullAttacks {
		streams, writeTimeout = 1000, 2*time.Second
	}
	const (
		interval = 200 * time.Millisecond
		fill     = 3 * interval // the ticks that fill a stream's buffers
		maxP99   = 50 * time.Millisecond
	)
	ts := startServer(t, func(c *Config) {
		c.PageInterval, c.PageStreamWriteTimeout, c.PageMaxStreams = interval, writeTimeout, streams
	})
	for i := range 100 {
		ts.get(t, "/sts/ADD?FILENAME="+fmt.Sprintf("%03d", i)+strings.Repeat("n", 897)+"&LINE=x")
	}
	ts.get(t, "/sts/ADD?FILENAME=probe&LINE=x")

	// The attackers: a request each, never a byte read.
	start := time.Now()
	conns := make([]net.Conn, streams)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", ts.addr, 10*time.Second)
			if err != nil {
				t.Errorf("stream %d: %v", i, err)
				return
			}
			conns[i] = c
			if _, err := io.WriteString(c, "GET /ui/events HTTP/1.1\r\nHost: sts\r\n\r\n"); err != nil {
				t.Errorf("stream %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	// LENGTH from two clients while the streams are open, until they are all dropped.
	stop := make(chan struct{})
	latencies := make([][]time.Duration, 2)
	var probes sync.WaitGroup
	for p := range latencies {
		probes.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				begin := time.Now()
				resp, err := client.Get(ts.base + "/sts/LENGTH?FILENAME=probe")
				if err != nil {
					t.Errorf("LENGTH: %v", err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				latencies[p] = append(latencies[p], time.Since(begin))
				time.Sleep(time.Millisecond)
			}
		})
	}
	peak, admitted := 0, time.Duration(0)
	deadline := time.Now().Add(writeTimeout + fill + 30*time.Second)
	for {
		n := ts.srv.page.Streams()
		if n > peak {
			peak, admitted = n, time.Since(start)
		}
		if n == 0 && peak > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	dropped := time.Since(start)
	close(stop)
	probes.Wait()
	left := ts.srv.page.Streams()

	all := slices.Concat(latencies...)
	slices.Sort(all)
	if len(all) == 0 {
		t.Fatal("no LENGTH answered")
	}
	p99 := all[len(all)*99/100]
	t.Logf("%d non-reading streams (%d at once, all open %v after the first dial): the last dropped %v after the first dial (write timeout %v, buffers full within %v); %d LENGTHs meanwhile: p50 %v, p99 %v, max %v",
		streams, peak, admitted.Round(time.Millisecond), dropped.Round(time.Millisecond), writeTimeout, fill, len(all),
		all[len(all)/2].Round(10*time.Microsecond), p99.Round(10*time.Microsecond), all[len(all)-1].Round(10*time.Microsecond))
	if left > 0 {
		t.Fatalf("%d of %d streams still open %v after the first dial", left, streams, dropped.Round(time.Second))
	}
	if bound := admitted + fill + writeTimeout + interval; dropped > bound+time.Second {
		t.Errorf("the last stream dropped %v after the first dial, more than %v (all open) + %v (buffers full) + %v (write timeout) + a tick",
			dropped.Round(time.Millisecond), admitted.Round(time.Millisecond), fill, writeTimeout)
	}
	if p99 > maxP99 {
		t.Errorf("LENGTH's p99 is %v while the streams were open, more than %v", p99, maxP99)
	}
	// Each attacker finds its connection reset or closed, not held open.
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("stream %d: its connection is still open", i)
		}
	}
}
