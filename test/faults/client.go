package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// Client sends operations as a real client does: one REQUEST_ID per logical operation, sent
// again through the next server until a definitive answer or GiveUp after its first sending.
// A Client is for one goroutine.
type Client struct {
	ID      int
	Servers []string // base URLs, http://127.0.0.1:port
	History *History
	Rand    *rand.Rand
	// GiveUp bounds the retries of one operation; AttemptTimeout one attempt. An attempt timed
	// out is retried as any other failure: the server may still run it, which REQUEST_ID covers.
	GiveUp, AttemptTimeout time.Duration
	// ResendRate is the share of successful operations sent once more after their answer.
	ResendRate float64
	// IDPrefix makes the ids of this client unique on the servers it talks to.
	IDPrefix string

	next int // the server the next attempt goes to
	n    int
}

// NewClient returns client id of h, starting with server id modulo the servers' count.
func NewClient(h *History, id int, servers []string, rng *rand.Rand, idPrefix string) *Client {
	return &Client{ID: id, Servers: servers, History: h, Rand: rng, IDPrefix: idPrefix,
		GiveUp: 30 * time.Second, AttemptTimeout: 5 * time.Second, next: id % len(servers)}
}

// httpClient is shared by every client: keep-alive connections spare the machine the handshakes
// under load, and a killed server's connections simply fail their next request.
var httpClient = &http.Client{Transport: &http.Transport{
	DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	MaxIdleConns:        512,
	MaxIdleConnsPerHost: 64,
	IdleConnTimeout:     30 * time.Second,
}}

// NewOp returns an operation of kind on list with a fresh REQUEST_ID: params are the command's,
// FORMAT=JSON and REQUEST_ID are added.
func (c *Client) NewOp(kind Kind, command, list string, params url.Values) *Op {
	c.n++
	op := &Op{ID: fmt.Sprintf("%s.%d.%d", c.IDPrefix, c.ID, c.n), Client: c.ID, Kind: kind, List: list, Command: command, Return: -1}
	if params == nil {
		params = url.Values{}
	}
	if list != "" {
		params.Set("FILENAME", list)
	}
	params.Set("FORMAT", "JSON")
	params.Set("REQUEST_ID", op.ID)
	op.Query = params.Encode()
	return op
}

// Do runs op until it is answered or given up, records it in the history, and, for a share of
// the successful ones, sends it once more (Op.Resend).
func (c *Client) Do(op *Op) {
	op.Call = c.History.Now()
	c.History.add(op)
	op.Attempts = c.retry(op)
	if a := op.Answer(); a != nil {
		op.Return = a.End
		if a.OK() && c.Rand.Float64() < c.ResendRate {
			op.Resend = c.retry(op)
		}
	}
}

// retry sends op until an attempt is definitive or GiveUp has passed, each attempt through the
// server after the previous one's, with exponential backoff and jitter.
func (c *Client) retry(op *Op) []Attempt {
	var attempts []Attempt
	deadline := time.Now().Add(c.GiveUp)
	backoff := 25 * time.Millisecond
	for {
		a := c.attempt(op, c.next)
		attempts = append(attempts, a)
		if a.Definitive() || time.Now().After(deadline) {
			return attempts
		}
		c.next = (c.next + 1) % len(c.Servers)
		time.Sleep(backoff/2 + time.Duration(c.Rand.Int64N(int64(backoff))))
		backoff = min(2*backoff, time.Second)
	}
}

func (c *Client) attempt(op *Op, server int) Attempt {
	a := Attempt{Server: server, Start: c.History.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), c.AttemptTimeout)
	defer cancel()
	// POST, even without a body: net/http sends a GET again by itself when the connection it
	// reused dies before the answer (a server killed), and that sending would be in no history.
	a.Status, a.Answer, a.Body, a.Err = Send(ctx, http.MethodPost, c.Servers[server], op.Command, op.Query, op.Body)
	a.End = c.History.Now()
	if a.Answer != nil && a.Answer.Expires != nil {
		// The server's wall clock; the history's start has a wall time too.
		a.ExpiresAt = a.Answer.Expires.Sub(c.History.Start)
	}
	return a
}

// Send sends one request, its parameters in the query string, and decodes its JSON answer: the
// HTTP status (0 when none came), the answer (nil when the body is not one, body then holding
// its start), and the error that left it without an answer.
func Send(ctx context.Context, method, base, command, query, body string) (int, *protocol.Answer, string, string) {
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/sts/"+command+"?"+query, reader)
	if err != nil {
		return 0, nil, "", err.Error()
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, "", err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, "", "reading the answer: " + err.Error()
	}
	var answer protocol.Answer
	if err := json.Unmarshal(b, &answer); err != nil {
		return resp.StatusCode, nil, string(b[:min(len(b), 200)]), ""
	}
	return resp.StatusCode, &answer, "", ""
}

// Get sends a command that changes nothing (EXPORT, STATUS) to the servers in turn until one
// answers it with 200, or ctx ends.
func Get(ctx context.Context, servers []string, command, query string) (*protocol.Answer, error) {
	var last string
	for i := 0; ; i++ {
		attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
		status, answer, body, err := Send(attempt, http.MethodGet, servers[i%len(servers)], command, query, "")
		cancel()
		if status == http.StatusOK && answer != nil {
			return answer, nil
		}
		last = fmt.Sprintf("%d %v %s %s", status, answer, body, err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s?%s: %s", command, query, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
