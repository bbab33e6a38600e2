package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// stsOption sets one thing on a SimpleTableServer fixture.
type stsOption func(*stsv1alpha1.SimpleTableServer)

// newSTS returns a SimpleTableServer named name in namespace "default" (see inNamespace), as a
// test would apply it, with opts applied in order.
func newSTS(name string, opts ...stsOption) *stsv1alpha1.SimpleTableServer {
	sts := &stsv1alpha1.SimpleTableServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
	}
	for _, o := range opts {
		o(sts)
	}
	return sts
}

func inNamespace(ns string) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Namespace = ns }
}

func withConfigMapDataset(name, configMap, key string) stsOption {
	return withDataset(stsv1alpha1.Dataset{Name: name, ConfigMap: &stsv1alpha1.KeySelector{Name: configMap, Key: key}})
}

func withSecretDataset(name, secret, key string) stsOption {
	return withDataset(stsv1alpha1.Dataset{Name: name, Secret: &stsv1alpha1.KeySelector{Name: secret, Key: key}})
}

func withClaimDataset(name, claim, path, match string) stsOption {
	return withDataset(stsv1alpha1.Dataset{Name: name, PersistentVolumeClaim: &stsv1alpha1.ClaimSource{ClaimName: claim, Path: path, Match: match}})
}

func withDataset(ds stsv1alpha1.Dataset) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Datasets = append(s.Spec.Datasets, ds) }
}

func withStorageSize(size string, class *string) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Storage = &stsv1alpha1.Storage{Size: ptr.To(resource.MustParse(size)), StorageClassName: class}
	}
}

func withExistingClaim(claim string) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Storage = &stsv1alpha1.Storage{ExistingClaim: claim} }
}

func withAuthToken(secret, key string) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Server.AuthTokenSecret = &stsv1alpha1.KeySelector{Name: secret, Key: key}
	}
}

func withPolicy(p stsv1alpha1.DatasetUpdatePolicy) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.DatasetUpdatePolicy = p }
}

func withRefresh(d time.Duration) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.StatusRefreshInterval = &metav1.Duration{Duration: d} }
}

func withPodLabels(labels map[string]string) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.PodLabels = labels }
}

func withImage(image string) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Image = image }
}

func withServer(opts stsv1alpha1.ServerOptions) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Server = opts }
}

func withLimits(l stsv1alpha1.ServerLimits) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Server.Limits = l }
}

// withRedis gives the resource a Redis backend (r nil: one that names no Redis) and replicas.
func withRedis(r *stsv1alpha1.RedisBackend, replicas int32) stsOption {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Backend = stsv1alpha1.Backend{Type: stsv1alpha1.BackendRedis, Redis: r}
		s.Spec.Replicas = replicas
	}
}
