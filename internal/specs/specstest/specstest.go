// Package specstest builds the SimpleTableServer resources that the tests of the builders
// (package specs) and of the reconciler (package controller) start from, with functional
// options that read like the spec they set: New("logins", WithConfigMapDataset("users",
// "logins", "users")). It also holds the few checks both packages make of built objects.
package specstest

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// Option sets one thing on a SimpleTableServer fixture.
type Option func(*stsv1alpha1.SimpleTableServer)

// New returns a SimpleTableServer named name in namespace "default" (see InNamespace), as a
// test would apply it, with opts applied in order.
func New(name string, opts ...Option) *stsv1alpha1.SimpleTableServer {
	tableServer := &stsv1alpha1.SimpleTableServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
	}
	for _, o := range opts {
		o(tableServer)
	}
	return tableServer
}

// InNamespace puts the resource in namespace ns.
func InNamespace(ns string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Namespace = ns }
}

// WithConfigMapDataset adds dataset name, read from key of ConfigMap configMap.
func WithConfigMapDataset(name, configMap, key string) Option {
	return WithDataset(stsv1alpha1.Dataset{Name: name, ConfigMap: &stsv1alpha1.KeySelector{Name: configMap, Key: key}})
}

// WithSecretDataset adds dataset name, read from key of Secret secret.
func WithSecretDataset(name, secret, key string) Option {
	return WithDataset(stsv1alpha1.Dataset{Name: name, Secret: &stsv1alpha1.KeySelector{Name: secret, Key: key}})
}

// WithClaimDataset adds dataset name, read from path on claim (a directory when match is set).
func WithClaimDataset(name, claim, path, match string) Option {
	return WithDataset(stsv1alpha1.Dataset{Name: name, PersistentVolumeClaim: &stsv1alpha1.ClaimSource{ClaimName: claim, Path: path, Match: match}})
}

// WithDataset adds ds to the resource's datasets.
func WithDataset(ds stsv1alpha1.Dataset) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Datasets = append(s.Spec.Datasets, ds) }
}

// WithStorageSize asks for a claim of size, of storage class class (nil: the default one).
func WithStorageSize(size string, class *string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Storage = &stsv1alpha1.Storage{Size: ptr.To(resource.MustParse(size)), StorageClassName: class}
	}
}

// WithExistingClaim keeps the server's lists on claim, which the user made.
func WithExistingClaim(claim string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage = &stsv1alpha1.Storage{ExistingClaim: claim} }
}

// WithAuthToken makes the server ask for the bearer token in key of Secret secret.
func WithAuthToken(secret, key string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Server.AuthTokenSecret = &stsv1alpha1.KeySelector{Name: secret, Key: key}
	}
}

// WithPolicy sets what happens to a loaded dataset whose source changes.
func WithPolicy(p stsv1alpha1.DatasetUpdatePolicy) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.DatasetUpdatePolicy = p }
}

// WithRefresh sets how often the operator reads the server's STATUS.
func WithRefresh(d time.Duration) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.StatusRefreshInterval = &metav1.Duration{Duration: d} }
}

// WithPodLabels sets the labels of the table-server pods.
func WithPodLabels(labels map[string]string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.PodLabels = labels }
}

// WithImage sets the table server's image.
func WithImage(image string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Image = image }
}

// WithServer sets the table server's options (spec.server), replacing any set before.
func WithServer(opts stsv1alpha1.ServerOptions) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Server = opts }
}

// WithLimits sets the table server's limits.
func WithLimits(l stsv1alpha1.ServerLimits) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Server.Limits = l }
}

// WithRedis gives the resource a Redis backend (r nil: one that names no Redis) and replicas.
func WithRedis(r *stsv1alpha1.RedisBackend, replicas int32) Option {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Backend = stsv1alpha1.Backend{Type: stsv1alpha1.BackendRedis, Redis: r}
		s.Spec.Replicas = replicas
	}
}

// RedisAt is a Redis backend that names address and nothing else.
func RedisAt(address string) *stsv1alpha1.RedisBackend {
	return &stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: address}}
}

// Image is the table-server image the tests build Deployments with, and the reconciler's default.
const Image = "sts-operator:test"

// LoadFlag is one --load or --load-dir argument of the server container.
type LoadFlag struct {
	Flag       string // "--load" or "--load-dir"
	List, Path string // for --load-dir: Path is the directory, List the pattern
}

// LoadFlags returns the --load and --load-dir arguments of d's server container, in order.
func LoadFlags(d *appsv1.Deployment) []LoadFlag {
	var flags []LoadFlag
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		flag, value, _ := strings.Cut(a, "=")
		switch flag {
		case "--load":
			list, p, _ := strings.Cut(value, "=")
			flags = append(flags, LoadFlag{flag, list, p})
		case "--load-dir":
			dir, match, _ := strings.Cut(value, "=")
			flags = append(flags, LoadFlag{flag, match, dir})
		}
	}
	return flags
}

// AssertOwnedBy fails t unless refs name tableServer, and only tableServer, as the controlling owner.
func AssertOwnedBy(t testing.TB, refs []metav1.OwnerReference, tableServer *stsv1alpha1.SimpleTableServer) {
	t.Helper()
	if len(refs) != 1 || refs[0].UID != tableServer.UID || refs[0].Kind != "SimpleTableServer" ||
		refs[0].APIVersion != "sts.tableserver.dev/v1alpha1" || !ptr.Deref(refs[0].Controller, false) {
		t.Errorf("owner references %+v, want the SimpleTableServer %s as controller", refs, tableServer.UID)
	}
}
