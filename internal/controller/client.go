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
	"time"

	corev1 "k8s.io/api/core/v1"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// EndpointResolver says where the operator reaches a resource's table servers.
type EndpointResolver interface {
	// BaseURL returns the base URL of the Service, such as http://name.namespace.svc:9191.
	BaseURL(tableServer *stsv1alpha1.SimpleTableServer) string
	// PodURL returns the base URL of one table-server pod, such as http://10.244.0.7:9191.
	PodURL(pod *corev1.Pod) string
}

// ServiceEndpoints reaches every table server through its Service's cluster DNS name, and a pod
// at its IP, which works when the operator runs in the cluster.
type ServiceEndpoints struct{}

// BaseURL returns specs.Endpoint(tableServer).
func (ServiceEndpoints) BaseURL(tableServer *stsv1alpha1.SimpleTableServer) string {
	return specs.Endpoint(tableServer)
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

// serverClient calls one table server's protocol in its JSON form.
type serverClient struct {
	http    *http.Client
	baseURL string
	token   string
}

// status reads the server's lists and their lengths.
func (s serverClient) status(ctx context.Context) (*protocol.Answer, error) {
	var st protocol.Answer
	if err := s.call(ctx, http.MethodGet, protocol.CmdStatus, nil, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// replaceList replaces the list's lines with content, a dataset file, parsed by the server
// with its read charset.
func (s serverClient) replaceList(ctx context.Context, list string, content []byte) error {
	var answer protocol.Answer
	digest := sha256.Sum256(content) // checked by the server, and reported back as the list's loadedSha256
	params := url.Values{"FILENAME": {list}, "MODE": {"REPLACE"}, "SHA256": {hex.EncodeToString(digest[:])}}
	return s.call(ctx, http.MethodPost, protocol.CmdLoad, params, content, &answer)
}

// reloadTimeout bounds a RELOAD, which reads every dataset file of the server again: longer than
// the other calls, whose timeout a large file on a claim could outlast.
const reloadTimeout = time.Minute

// reload asks the server to reload every startup source into its list (RELOAD), with requestID
// as its REQUEST_ID: a retry of a reload whose answer was lost gets that answer, and reloads
// nothing again. It returns the lists reloaded, also when some could not be (a *refusedError).
func (s serverClient) reload(ctx context.Context, requestID string) ([]protocol.List, error) {
	var answer protocol.Answer
	long := s
	client := *s.http
	client.Timeout = max(client.Timeout, reloadTimeout)
	long.http = &client
	err := long.call(ctx, http.MethodPost, protocol.CmdReload, url.Values{"REQUEST_ID": {requestID}}, nil, &answer)
	return answer.Lists, err
}

// call sends protocol.CommandPrefix + command (/sts/STATUS) with the JSON form requested and
// decodes the answer into out.
func (s serverClient) call(ctx context.Context, method, command string, params url.Values, body []byte, out *protocol.Answer) error {
	if params == nil {
		params = url.Values{}
	}
	params.Set("FORMAT", "JSON")
	u := s.baseURL + protocol.CommandPrefix + command + "?" + params.Encode()
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
