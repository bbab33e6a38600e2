package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// client calls one table server's protocol in its JSON form.
type client struct {
	http  *http.Client
	base  string // e.g. http://logins.default.svc:9191
	token string // bearer token; empty when the server has none
}

func newClient(base, tokenFile string) (*client, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError(fmt.Sprintf("-url %q: want http://host:port", base))
	}
	c := &client{http: &http.Client{Timeout: 10 * time.Second}, base: strings.TrimSuffix(base, "/")}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading the token: %w", err)
		}
		c.token = strings.TrimSpace(string(b))
	}
	return c, nil
}

// exhausted says the list has no line to give: empty, or not created yet by a producer.
func exhausted(a protocol.Answer) bool {
	return !a.OK && (a.Reason == protocol.ReasonEmpty || a.Reason == protocol.ReasonNotLoaded)
}

// koError is an answer that no retry can change, such as a bad token.
type koError struct{ command, reason, message string }

func (e *koError) Error() string {
	return fmt.Sprintf("%s answered %s: %s", e.command, e.reason, e.message)
}

// unavailableError is a KO answered with HTTP 503, which the protocol says is worth asking
// again: the server is starting or stopping (reason unavailable), or it could not reach its
// backend (Redis down) or record the change.
type unavailableError struct{ command, reason, message string }

func (e *unavailableError) Error() string {
	return fmt.Sprintf("%s answered HTTP 503 %s: %s", e.command, e.reason, e.message)
}

// mayHaveRun says whether the command may have run before the server gave up: a starting or
// stopping server refuses it before running anything, while a backend that broke off (the
// connection to Redis lost after the script was sent) or a journal that failed leave it unknown.
func (e *unavailableError) mayHaveRun() bool { return e.reason != protocol.ReasonUnavailable }

// call sends /sts/<command> as a POST form. It returns an answer for OK and for an exhausted
// list, an *unavailableError for a KO answered with HTTP 503, a *koError for any other KO, and
// a transport error otherwise (see notSent and notRun).
func (c *client) call(ctx context.Context, command string, params url.Values) (protocol.Answer, error) {
	params.Set("FORMAT", "JSON")
	return c.send(ctx, command, "", "application/x-www-form-urlencoded", params.Encode())
}

// load replaces list with lines (LOAD MODE=REPLACE). Repeating it cannot change the outcome,
// so a request that breaks in transport is sent again until one is answered or ctx ends.
func (c *client) load(ctx context.Context, list string, lines []string) error {
	query := url.Values{"FILENAME": {list}, "MODE": {"REPLACE"}, "FORMAT": {"JSON"}}.Encode()
	var body string
	if len(lines) > 0 {
		body = strings.Join(lines, "\n") + "\n"
	}
	for {
		_, err := c.send(ctx, "LOAD", query, "text/plain; charset=UTF-8", body)
		var ko *koError
		if err == nil || errors.As(err, &ko) || ctx.Err() != nil {
			return err
		}
		pause(ctx, retryDelay)
	}
}

// send POSTs body to /sts/<command>?query and decodes the JSON answer, like call.
func (c *client) send(ctx context.Context, command, query, contentType, body string) (protocol.Answer, error) {
	target := c.base + "/sts/" + command
	if query != "" {
		target += "?" + query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		return protocol.Answer{}, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return protocol.Answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return protocol.Answer{}, err
	}
	var a protocol.Answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return protocol.Answer{}, fmt.Errorf("%s: HTTP %d with a body that is not the JSON form: %.200q", command, resp.StatusCode, raw)
	}
	if !a.OK && resp.StatusCode == http.StatusServiceUnavailable {
		return a, &unavailableError{command: command, reason: a.Reason, message: a.Error}
	}
	if !a.OK && !exhausted(a) {
		return a, &koError{command: command, reason: a.Reason, message: a.Error}
	}
	return a, nil
}

// notSent says that a request failed before it reached a server (no connection, or the name
// did not resolve), so repeating it cannot run a command twice.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// notRun says that no server ran the request: it never reached one (notSent), or a starting or
// stopping server refused it (HTTP 503 unavailable). Repeating it cannot run a command twice.
func notRun(err error) bool {
	var busy *unavailableError
	return notSent(err) || errors.As(err, &busy) && !busy.mayHaveRun()
}

// retryDelay is the pause before repeating a request that failed in transport: long enough not
// to spin while a server restarts, short against the time a restart takes.
const retryDelay = 100 * time.Millisecond

// pause sleeps for d unless ctx ends first.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ticker paces requests to a rate shared by all workers; a nil ticker does not pace.
type ticker struct{ c <-chan time.Time }

func newTicker(ctx context.Context, perSecond float64) *ticker {
	if perSecond <= 0 {
		return nil
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	context.AfterFunc(ctx, t.Stop)
	return &ticker{c: t.C}
}

// wait blocks until the next request may go, and reports false when ctx ended.
func (t *ticker) wait(ctx context.Context) bool {
	if t == nil {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-t.c:
		return true
	}
}
