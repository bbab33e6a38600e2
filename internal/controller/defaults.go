package controller

import (
	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
)

// withDefaults returns sts as the operator runs it: a Redis backend that names no Redis gets
// the operator's default one (nil: none), with the database, credentials and TLS the resource
// sets itself in place of the default's. sts itself is left alone.
func withDefaults(sts *stsv1alpha1.SimpleTableServer, defaultRedis *stsv1alpha1.RedisConnection) *stsv1alpha1.SimpleTableServer {
	if !specs.Shared(sts) || defaultRedis == nil || namesRedis(sts) {
		return sts
	}
	out := sts.DeepCopy()
	if out.Spec.Backend.Redis == nil {
		out.Spec.Backend.Redis = &stsv1alpha1.RedisBackend{}
	}
	own := out.Spec.Backend.Redis.RedisConnection
	c := defaultRedis.DeepCopy()
	if own.Database != nil {
		c.Database = own.Database
	}
	if own.CredentialsSecret != nil {
		c.CredentialsSecret = own.CredentialsSecret
	}
	if own.TLS != nil {
		c.TLS = own.TLS
	}
	out.Spec.Backend.Redis.RedisConnection = *c
	return out
}

// namesRedis says whether sts's Redis backend names its own Redis.
func namesRedis(sts *stsv1alpha1.SimpleTableServer) bool {
	r := sts.Spec.Backend.Redis
	return r != nil && (r.Address != "" || r.Sentinel != nil)
}
