package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

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

// previous returns the token tableServer's server last accepted from tableServer's current token Secret key.
func (a *acceptedTokens) previous(tableServer *stsv1alpha1.SimpleTableServer) (string, bool) {
	ref := tableServer.Spec.Server.AuthTokenSecret
	if ref == nil {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.tokens[client.ObjectKeyFromObject(tableServer)]
	if !ok || t.uid != tableServer.UID || t.secret != *ref {
		return "", false
	}
	return t.token, true
}

// accepted records that tableServer's server accepted token at now: the Secret's (current) or the
// previous one. It reports, once per such period, a server that has taken only the previous
// token for longer than tokenLag: one whose image predates token rotation never takes the new
// one, and its clients with the new token are refused.
func (a *acceptedTokens) accepted(tableServer *stsv1alpha1.SimpleTableServer, token string, current bool, now time.Time) (overdue bool) {
	ref := tableServer.Spec.Server.AuthTokenSecret
	key := client.ObjectKeyFromObject(tableServer)
	a.mu.Lock()
	defer a.mu.Unlock()
	if ref == nil {
		delete(a.tokens, key)
		return false
	}
	t := a.tokens[key]
	next := acceptedToken{uid: tableServer.UID, secret: *ref, token: token}
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
