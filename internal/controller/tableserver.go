package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// EndpointResolver says where the operator reaches a resource's table servers.
type EndpointResolver interface {
	// BaseURL returns the base URL of the Service, such as http://name.namespace.svc:9191.
	BaseURL(sts *stsv1alpha1.SimpleTableServer) string
	// PodURL returns the base URL of one table-server pod, such as http://10.244.0.7:9191.
	PodURL(pod *corev1.Pod) string
}

// ServiceEndpoints reaches every table server through its Service's cluster DNS name, and a pod
// at its IP, which works when the operator runs in the cluster.
type ServiceEndpoints struct{}

// BaseURL returns specs.Endpoint(sts).
func (ServiceEndpoints) BaseURL(sts *stsv1alpha1.SimpleTableServer) string {
	return specs.Endpoint(sts)
}

// PodURL returns http://<pod IP>:9191.
func (ServiceEndpoints) PodURL(pod *corev1.Pod) string {
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(specs.ServerPort))
}

// NewHTTPClient returns a client for table servers: every call ends within timeout, and a
// server that does not accept connections fails within half of it.
func NewHTTPClient(timeout time.Duration) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: timeout / 2}).DialContext
	transport.Proxy = nil // table servers are reached directly, never through a proxy
	return &http.Client{Timeout: timeout, Transport: transport}
}

// tableServer calls one table server's protocol in its JSON form.
type tableServer struct {
	http    *http.Client
	baseURL string
	token   string
}

// status reads the server's lists and their lengths.
func (s tableServer) status(ctx context.Context) (*protocol.Answer, error) {
	var st protocol.Answer
	if err := s.call(ctx, http.MethodGet, "STATUS", nil, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// replaceList replaces the list's lines with content, a dataset file, parsed by the server
// with its read charset.
func (s tableServer) replaceList(ctx context.Context, list string, content []byte) error {
	var answer protocol.Answer
	digest := sha256.Sum256(content) // checked by the server, and reported back as the list's loadedSha256
	params := url.Values{"FILENAME": {list}, "MODE": {"REPLACE"}, "SHA256": {hex.EncodeToString(digest[:])}}
	return s.call(ctx, http.MethodPost, "LOAD", params, content, &answer)
}

// reloadTimeout bounds a RELOAD, which reads every dataset file of the server again: longer than
// the other calls, whose timeout a large file on a claim could outlast.
const reloadTimeout = time.Minute

// reload asks the server to reload every startup source into its list (RELOAD), with requestID
// as its REQUEST_ID: a retry of a reload whose answer was lost gets that answer, and reloads
// nothing again. It returns the lists reloaded, also when some could not be (a *refusedError).
func (s tableServer) reload(ctx context.Context, requestID string) ([]protocol.List, error) {
	var answer protocol.Answer
	long := s
	client := *s.http
	client.Timeout = max(client.Timeout, reloadTimeout)
	long.http = &client
	err := long.call(ctx, http.MethodPost, "RELOAD", url.Values{"REQUEST_ID": {requestID}}, nil, &answer)
	return answer.Lists, err
}

// call sends /sts/<command> with the JSON form requested and decodes the answer into out.
func (s tableServer) call(ctx context.Context, method, command string, params url.Values, body []byte, out *protocol.Answer) error {
	if params == nil {
		params = url.Values{}
	}
	params.Set("FORMAT", "JSON")
	u := s.baseURL + "/sts/" + command + "?" + params.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("while building the %s request: %w", command, err)
	}
	// The header as well as FORMAT: a request the server cannot parse (a body over its limit)
	// is answered in JSON only when the header asks.
	req.Header.Set("Accept", "application/json")
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", command, withoutLocalAddress(err))
	}
	defer resp.Body.Close()
	// Answers are small; the limit keeps a misbehaving server from filling the operator's memory.
	dec := json.NewDecoder(io.LimitReader(resp.Body, 16<<20))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%s: HTTP %d with an answer that is not the table server's JSON: %w", command, resp.StatusCode, err)
	}
	if !out.OK {
		return &refusedError{command: command, httpStatus: resp.StatusCode, reason: out.Reason, message: out.Error}
	}
	return nil
}

// refusedError is a command the table server answered with a KO: it runs, and it refused (a
// limit, a bad token: HTTP 4xx, which asking again does not change) or failed on its side
// (HTTP 5xx).
type refusedError struct {
	command    string
	httpStatus int
	reason     string // protocol.Reason*
	message    string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.command, e.httpStatus, e.message)
}

// withoutLocalAddress drops the connection's local address and port from a transport error
// ("read tcp 10.0.0.7:51234->10.96.0.5:9191: connection reset by peer"). The port changes with
// every call, and the error ends up in a condition message: a server that keeps failing the
// same way must keep the same message, or every poll would write status and record an event.
func withoutLocalAddress(err error) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Source == nil {
		return err
	}
	stable := *op
	stable.Source = nil
	return &stable
}

// backendUnavailable says that a table server could not reach its Redis.
func backendUnavailable(err error) bool {
	var refused *refusedError
	return errors.As(err, &refused) && refused.reason == protocol.ReasonBackendUnavailable
}

// unauthorized says that a table server refused the operator's token.
func unauthorized(err error) bool {
	var refused *refusedError
	return errors.As(err, &refused) && refused.httpStatus == http.StatusUnauthorized
}

// acceptedTokens remembers, per resource, the auth token its table server last accepted. A
// rotated Secret reaches the operator at once, but the copy mounted in the server's pod only
// when the kubelet next syncs it, a minute or two later: until then the server wants the old
// token, which the operator keeps using where the new one is refused. A token is only offered
// again to the same resource (its UID) reading the same Secret key.
type acceptedTokens struct {
	mu     sync.Mutex
	tokens map[types.NamespacedName]acceptedToken
}

type acceptedToken struct {
	uid    types.UID
	secret stsv1alpha1.KeySelector
	token  string
	// since is when the server was first seen refusing the Secret's token and taking this one
	// (zero while it takes the Secret's), and warned whether that was reported as overdue.
	since  time.Time
	warned bool
}

// tokenLag is how long a server may go on refusing a rotated token before it is reported: the
// kubelet refreshes a mounted Secret within about a minute or two.
const tokenLag = 5 * time.Minute

func newAcceptedTokens() *acceptedTokens {
	return &acceptedTokens{tokens: map[types.NamespacedName]acceptedToken{}}
}

// previous returns the token sts's server last accepted from sts's current token Secret key.
func (a *acceptedTokens) previous(sts *stsv1alpha1.SimpleTableServer) (string, bool) {
	ref := sts.Spec.Server.AuthTokenSecret
	if ref == nil {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.tokens[client.ObjectKeyFromObject(sts)]
	if !ok || t.uid != sts.UID || t.secret != *ref {
		return "", false
	}
	return t.token, true
}

// accepted records that sts's server accepted token at now: the Secret's (current) or the
// previous one. It reports, once per such period, a server that has taken only the previous
// token for longer than tokenLag: one whose image predates token rotation never takes the new
// one, and its clients with the new token are refused.
func (a *acceptedTokens) accepted(sts *stsv1alpha1.SimpleTableServer, token string, current bool, now time.Time) (overdue bool) {
	ref := sts.Spec.Server.AuthTokenSecret
	key := client.ObjectKeyFromObject(sts)
	a.mu.Lock()
	defer a.mu.Unlock()
	if ref == nil {
		delete(a.tokens, key)
		return false
	}
	t := a.tokens[key]
	next := acceptedToken{uid: sts.UID, secret: *ref, token: token}
	if !current {
		next.since, next.warned = t.since, t.warned
		if next.since.IsZero() {
			next.since = now
		}
		overdue = !next.warned && now.Sub(next.since) > tokenLag
		next.warned = next.warned || overdue
	}
	a.tokens[key] = next
	return overdue
}

// forget drops a deleted resource's token.
func (a *acceptedTokens) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.tokens, key)
}
