// Package specstest builds the SimpleTableServer resources that the tests of the builders
// (package specs) and of the reconciler (package controllers) start from, with functional
// options that read like the spec they set: New("logins", WithConfigMapDataset("users",
// "logins", "users")). It also holds the few checks both packages make of built objects.
package specstest

import (
	"time"

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
	sts := &stsv1alpha1.SimpleTableServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
	}
	for _, o := range opts {
		o(sts)
	}
	return sts
}

func InNamespace(ns string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Namespace = ns }
}

func WithConfigMapDataset(name, configMap, key string) Option {
	return WithDataset(stsv1alpha1.Dataset{Name: name, ConfigMap: &stsv1alpha1.KeySelector{Name: configMap, Key: key}})
}

func WithSecretDataset(name, secret, key string) Option {
	return WithDataset(stsv1alpha1.Dataset{Name: name, Secret: &stsv1alpha1.KeySelector{Name: secret, Key: key}})
}

func WithClaimDataset(name, claim, path, match string) Option {
	return WithDataset(stsv1alpha1.Dataset{Name: name, PersistentVolumeClaim: &stsv1alpha1.ClaimSource{ClaimName: claim, Path: path, Match: match}})
}

func WithDataset(ds stsv1alpha1.Dataset) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Datasets = append(s.Spec.Datasets, ds) }
}

func WithStorageSize(size string, class *string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Storage = &stsv1alpha1.Storage{Size: ptr.To(resource.MustParse(size)), StorageClassName: class}
	}
}

func WithExistingClaim(claim string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage = &stsv1alpha1.Storage{ExistingClaim: claim} }
}

func WithAuthToken(secret, key string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Server.AuthTokenSecret = &stsv1alpha1.KeySelector{Name: secret, Key: key}
	}
}

func WithPolicy(p stsv1alpha1.DatasetUpdatePolicy) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.DatasetUpdatePolicy = p }
}

func WithRefresh(d time.Duration) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.StatusRefreshInterval = &metav1.Duration{Duration: d} }
}

func WithPodLabels(labels map[string]string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.PodLabels = labels }
}

func WithImage(image string) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Image = image }
}

func WithServer(opts stsv1alpha1.ServerOptions) Option {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Server = opts }
}

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
