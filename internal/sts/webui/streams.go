package webui

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// A live stream holds a goroutine, a connection and what the kernel buffers for it, for as long
// as its browser stays: streams are counted, in all and per session, and one whose browser stops
// reading is dropped once a write has waited StreamWriteTimeout (the probe held 1 000
// streams that never read, 1.43 GB of send queues, for good).

// DefaultStreamWriteTimeout is how long a stream's write may wait for its browser to read.
const DefaultStreamWriteTimeout = 10 * time.Second

// streamSendBuffer is the socket send buffer of a stream's connection (the kernel doubles it):
// what a browser that stops reading can leave queued, rather than the several MiB the kernel's
// tuning gives a fast connection. An event of 100 rows fits twice; a browser 100 ms away still
// gets 600 KiB a second.
const streamSendBuffer = 64 << 10

// streamCounts counts the live streams, in all and per session.
type streamCounts struct {
	mu        sync.Mutex
	total     int
	bySession map[string]int
}

// admit counts a stream of the session nonce, within maxTotal streams in all and maxPerSession
// per session (zero: no limit), and returns its release; or it says which limit refuses it.
func (c *streamCounts) admit(nonce string, maxTotal, maxPerSession int) (release func(), refusal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case maxTotal > 0 && c.total >= maxTotal:
		return nil, fmt.Sprintf("This server already sends %d live streams, its limit (--ui-max-streams): the page is not live until one ends.", maxTotal)
	case maxPerSession > 0 && c.bySession[nonce] >= maxPerSession:
		return nil, fmt.Sprintf("This browser already has %d live streams open, the limit a session has (--ui-max-streams-per-session): close a tab of the page.", maxPerSession)
	}
	if c.bySession == nil {
		c.bySession = map[string]int{}
	}
	c.total++
	c.bySession[nonce]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.total--
			if c.bySession[nonce]--; c.bySession[nonce] == 0 {
				delete(c.bySession, nonce)
			}
		})
	}, ""
}

// count returns the live streams.
func (c *streamCounts) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

type connKey struct{}

// ConnContext is the ConnContext of the http.Server that serves the page: it lets a stream reach
// its connection, to bound its send buffer and to reset it when its browser stops reading.
// Without it streams are still dropped, their unsent bytes left to the kernel.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// tcpConn returns the TCP connection of a request served with ConnContext, nil if none.
func tcpConn(ctx context.Context) *net.TCPConn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	for c != nil {
		switch t := c.(type) {
		case *net.TCPConn:
			return t
		case interface{ NetConn() net.Conn }: // *tls.Conn
			c = t.NetConn()
		default:
			return nil
		}
	}
	return nil
}
