package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// Annotations on the Deployment through which the operator remembers what its server loaded.
const (
	// loadedDatasetsAnnotation, on the Deployment, holds the content hash of every ConfigMap
	// and Secret dataset as the running server loaded it (JSON object: dataset name -> hash).
	loadedDatasetsAnnotation = "sts.tableserver.dev/loaded-datasets"
	// reloadedAtGenerationAnnotation, on the Deployment, holds its generation just before the
	// operator recorded a reload in loadedDatasetsAnnotation (the first of the records the
	// Deployment controller had not seen yet). An annotation change bumps a Deployment's
	// generation without changing its pod; this says which bumps they were. A new spec removes it.
	reloadedAtGenerationAnnotation = "sts.tableserver.dev/reloaded-at-generation"
)

// Field indexes on SimpleTableServers: the names of the ConfigMaps and Secrets they read, so
// that a change to one of them reaches the resources that read it.
const (
	configMapIndex = "spec.configMapNames"
	secretIndex    = "spec.secretNames"
)

// referencedConfigMaps is the configMapIndex function.
func referencedConfigMaps(obj client.Object) []string {
	var names []string
	for _, ds := range obj.(*stsv1alpha1.SimpleTableServer).Spec.Datasets {
		if ds.ConfigMap != nil {
			names = append(names, ds.ConfigMap.Name)
		}
	}
	return names
}

// referencedSecrets is the secretIndex function: the Secrets of datasets, of the auth token,
// and of the Redis the resource runs with (the operator's default one's too).
func (r *SimpleTableServerReconciler) referencedSecrets(obj client.Object) []string {
	tableServer := r.Defaults.Apply(obj.(*stsv1alpha1.SimpleTableServer))
	var names []string
	for _, ds := range tableServer.Spec.Datasets {
		if ds.Secret != nil {
			names = append(names, ds.Secret.Name)
		}
	}
	for _, ref := range secretKeys(tableServer) {
		names = append(names, ref.sel.Name)
	}
	return names
}

// secretRef is a Secret key that the table servers mount, other than a dataset's.
type secretRef struct {
	sel  stsv1alpha1.KeySelector
	what string // the field that names it, for messages
}

// secretKeys are the Secret keys tableServer's pods mount besides datasets: the auth token, and the
// Redis credentials and CA.
func secretKeys(tableServer *stsv1alpha1.SimpleTableServer) []secretRef {
	var refs []secretRef
	if tok := tableServer.Spec.Server.AuthTokenSecret; tok != nil {
		refs = append(refs, secretRef{*tok, "authTokenSecret"})
	}
	if r := tableServer.Spec.Backend.Redis; specs.Shared(tableServer) && r != nil {
		if c := r.CredentialsSecret; c != nil {
			refs = append(refs, secretRef{stsv1alpha1.KeySelector{Name: c.Name, Key: specs.PasswordKey(c)}, "backend.redis.credentialsSecret"})
			if c.UsernameKey != "" {
				refs = append(refs, secretRef{stsv1alpha1.KeySelector{Name: c.Name, Key: c.UsernameKey}, "backend.redis.credentialsSecret"})
			}
		}
		if r.TLS != nil && r.TLS.CASecret != nil {
			refs = append(refs, secretRef{*r.TLS.CASecret, "backend.redis.tls.caSecret"})
		}
	}
	return refs
}

// sources is what the ConfigMaps and Secrets that a resource reads hold now.
type sources struct {
	// content of each ConfigMap and Secret dataset, by dataset name.
	content map[string][]byte
	// hashes of content, by dataset name.
	hashes map[string]string
	// missing describes each source that does not exist, for messages.
	missing []string
	// authToken is the server's bearer token ("" without spec.server.authTokenSecret), without
	// the white space around it, as the server reads its token file.
	authToken string
}

// resolveSources reads the ConfigMaps and Secrets that tableServer references (see sourceCache).
// A missing object or key is recorded in missing, not returned as an error.
func (r *SimpleTableServerReconciler) resolveSources(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer) (*sources, error) {
	src := &sources{content: map[string][]byte{}, hashes: map[string]string{}}
	for _, ds := range tableServer.Spec.Datasets {
		var (
			data []byte
			err  error
		)
		switch {
		case ds.ConfigMap != nil:
			data, err = r.configMapKey(ctx, tableServer.Namespace, *ds.ConfigMap)
		case ds.Secret != nil:
			data, err = r.secretKey(ctx, tableServer.Namespace, *ds.Secret)
		default:
			continue // a claim: its files are read by the server only
		}
		var missing *missingSourceError
		switch {
		case errors.As(err, &missing):
			src.missing = append(src.missing, fmt.Sprintf("%s (dataset %q)", missing, ds.Name))
		case err != nil:
			return nil, err
		default:
			src.content[ds.Name] = data
			src.hashes[ds.Name] = specs.Hash(data)
		}
	}
	// A pod whose Secret or key is missing would never start: report it before.
	for _, ref := range secretKeys(tableServer) {
		data, err := r.secretKey(ctx, tableServer.Namespace, ref.sel)
		var missing *missingSourceError
		switch {
		case errors.As(err, &missing):
			if what := fmt.Sprintf("%s (%s)", missing, ref.what); !slices.Contains(src.missing, what) {
				src.missing = append(src.missing, what) // the password's and the username's Secret
			}
		case err != nil:
			return nil, err
		case ref.what == "authTokenSecret":
			if src.authToken = strings.TrimSpace(string(data)); src.authToken == "" {
				// The server refuses to start with an empty token: report it before a new pod
				// would crash-loop on it.
				src.missing = append(src.missing, fmt.Sprintf("a token in key %q of Secret %q, which is empty (authTokenSecret)", ref.sel.Key, ref.sel.Name))
			}
		}
	}
	return src, nil
}

// missingSourceError says which ConfigMap or Secret, or which key of it, does not exist.
type missingSourceError struct{ what string }

func (e *missingSourceError) Error() string { return e.what }

func (r *SimpleTableServerReconciler) configMapKey(ctx context.Context, ns string, sel stsv1alpha1.KeySelector) ([]byte, error) {
	return r.sourceKey(ctx, sourceObject{kind: "ConfigMap", key: types.NamespacedName{Namespace: ns, Name: sel.Name}}, sel.Key)
}

func (r *SimpleTableServerReconciler) secretKey(ctx context.Context, ns string, sel stsv1alpha1.KeySelector) ([]byte, error) {
	return r.sourceKey(ctx, sourceObject{kind: "Secret", key: types.NamespacedName{Namespace: ns, Name: sel.Name}}, sel.Key)
}

// sourceKey returns the value of key in obj.
func (r *SimpleTableServerReconciler) sourceKey(ctx context.Context, obj sourceObject, key string) ([]byte, error) {
	data, found, err := r.sourceCache.data(ctx, obj)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, &missingSourceError{fmt.Sprintf("%s %q", obj.kind, obj.key.Name)}
	}
	if b, ok := data[key]; ok {
		return b, nil
	}
	return nil, &missingSourceError{fmt.Sprintf("key %q of %s %q", key, obj.kind, obj.key.Name)}
}

// loadedHashes returns the content hashes recorded on the Deployment when its server loaded
// the datasets (empty when there is no Deployment or no record).
func loadedHashes(d *appsv1.Deployment) map[string]string {
	hashes := map[string]string{}
	if d != nil {
		// A damaged record reads as "nothing loaded": the worst outcome is one reload or report.
		_ = json.Unmarshal([]byte(d.Annotations[loadedDatasetsAnnotation]), &hashes)
	}
	return hashes
}

// loadedBy returns what the server holds of each ConfigMap and Secret dataset: the hash of the
// content the server says it last loaded the dataset's list from, and where it does not say (a
// list restored from a durable server's journal, a client's own LOAD or INITFILE, a server that
// did not answer) the record on the Deployment. The server's word wins because a restarted
// server loads its mounted files again, which may hold an older version than the record's (the
// kubelet refreshes them late), or a newer one.
func (src *sources) loadedBy(d *appsv1.Deployment, s *protocol.Answer) map[string]string {
	loaded := loadedHashes(d)
	if s != nil {
		for _, l := range s.Lists {
			if _, dataset := src.hashes[l.Name]; dataset && len(l.LoadedSHA256) >= specs.HashLength {
				loaded[l.Name] = l.LoadedSHA256[:specs.HashLength]
			}
		}
	}
	return loaded
}

// recordStale says whether loaded, from loadedBy, differs from d's record for a dataset.
func (src *sources) recordStale(d *appsv1.Deployment, loaded map[string]string) bool {
	record := loadedHashes(d)
	for name := range src.hashes {
		if loaded[name] != record[name] {
			return true
		}
	}
	return false
}

// encodeHashes is the loadedDatasetsAnnotation value for hashes.
func encodeHashes(hashes map[string]string) string {
	b, _ := json.Marshal(hashes) // a map of strings always marshals
	return string(b)
}

// loadedAfterRestart is the loaded-datasets record for a new pod: every source as it is now,
// except that a durable server restores its journal instead of loading the datasets it held
// before, which keep the content recorded for them; only datasets new to it come from their
// sources.
func loadedAfterRestart(durable bool, before, now map[string]string) map[string]string {
	if !durable {
		return now
	}
	out := make(map[string]string, len(now))
	for name, hash := range now {
		if old, held := before[name]; held {
			hash = old
		}
		out[name] = hash
	}
	return out
}

// changedSince returns, sorted, the datasets whose source content differs from loaded.
func (s *sources) changedSince(loaded map[string]string) []string {
	var changed []string
	for name, h := range s.hashes {
		if loaded[name] != h {
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	return changed
}
