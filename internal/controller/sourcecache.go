package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// sourceCache reads the ConfigMaps and Secrets that datasets name. The manager caches only the
// metadata of ConfigMaps and Secrets: a cluster may hold many large ones that no dataset reads
// (Helm keeps every release in a Secret), and caching them whole could exhaust the operator's
// memory. The content of the objects datasets do read is fetched from the API server when their
// resourceVersion changes, and kept while resources read it.
type sourceCache struct {
	metadata client.Reader // the manager's cache, holding the objects' metadata
	api      client.Reader // the API server itself
	now      func() time.Time

	mu      sync.Mutex
	objects map[sourceObject]sourceContent
	swept   time.Time // when unused content was last dropped
}

// forgetAfter is how long content no reconcile reads is kept. Every resource reads its sources
// at least once per refresh interval (one hour at most), so only the content of objects that no
// resource names any more, or that were deleted with their resource, is dropped.
const forgetAfter = 2 * time.Hour

// sourceObject names a ConfigMap or Secret.
type sourceObject struct {
	kind string // "ConfigMap" or "Secret"
	key  types.NamespacedName
}

// sourceContent is an object's data as of its resourceVersion; a ConfigMap's Data and
// BinaryData together (the API server refuses a key in both).
type sourceContent struct {
	resourceVersion string
	data            map[string][]byte
	used            time.Time // when a reconcile last read it
}

func newSourceCache(metadata, api client.Reader) *sourceCache {
	return &sourceCache{metadata: metadata, api: api, now: time.Now, objects: map[sourceObject]sourceContent{}}
}

// data returns the object's data; found is false when it does not exist.
func (c *sourceCache) data(ctx context.Context, obj sourceObject) (data map[string][]byte, found bool, err error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(obj.kind))
	if err := c.metadata.Get(ctx, obj.key, meta); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(obj)
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("while getting %s %q: %w", obj.kind, obj.key.Name, err)
	}
	now := c.now()
	c.mu.Lock()
	c.sweep(now)
	kept, ok := c.objects[obj]
	if ok && kept.resourceVersion == meta.ResourceVersion {
		kept.used = now
		c.objects[obj] = kept
		c.mu.Unlock()
		return kept.data, true, nil
	}
	c.mu.Unlock()
	fetched, err := c.fetch(ctx, obj)
	if apierrors.IsNotFound(err) {
		c.forget(obj)
		return nil, false, nil // deleted since the cache saw it
	}
	if err != nil {
		return nil, false, fmt.Errorf("while getting %s %q: %w", obj.kind, obj.key.Name, err)
	}
	fetched.used = now
	c.mu.Lock()
	c.objects[obj] = fetched
	c.mu.Unlock()
	return fetched.data, true, nil
}

// sweep drops the content not read for forgetAfter, at most twice per forgetAfter; c.mu must be
// held.
func (c *sourceCache) sweep(now time.Time) {
	if now.Sub(c.swept) < forgetAfter/2 {
		return
	}
	c.swept = now
	for obj, content := range c.objects {
		if now.Sub(content.used) > forgetAfter {
			delete(c.objects, obj)
		}
	}
}

// fetch reads the object from the API server.
func (c *sourceCache) fetch(ctx context.Context, obj sourceObject) (sourceContent, error) {
	if obj.kind == "Secret" {
		var s corev1.Secret
		if err := c.api.Get(ctx, obj.key, &s); err != nil {
			return sourceContent{}, err
		}
		return sourceContent{resourceVersion: s.ResourceVersion, data: s.Data}, nil
	}
	var cm corev1.ConfigMap
	if err := c.api.Get(ctx, obj.key, &cm); err != nil {
		return sourceContent{}, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return sourceContent{resourceVersion: cm.ResourceVersion, data: data}, nil
}

func (c *sourceCache) forget(obj sourceObject) {
	c.mu.Lock()
	delete(c.objects, obj)
	c.mu.Unlock()
}
