package specs

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// Defaults are the cluster admin's settings for every table server whose resource does not set
// its own: the Redis of a Redis backend that names none (the manager's --default-redis), the
// pod fields of a SimpleTableServer's spec and the security contexts, which a resource cannot
// set (the chart's tableServerDefaults, the manager's --table-server-defaults). Apply is the
// one defaulting step: every step of a reconcile after reading the resource works on what it
// returns. The default image is not here: it is the manager's --sts-image, pinned at a
// server's creation.
type Defaults struct {
	// Redis is the Redis of resources whose Redis backend names none (nil: such a resource
	// stalls until it names one). It is its own flag, not a field of --table-server-defaults.
	Redis *stsv1alpha1.RedisConnection `json:"-"`

	ImagePullPolicy           corev1.PullPolicy                 `json:"imagePullPolicy,omitempty"`
	ImagePullSecrets          []corev1.LocalObjectReference     `json:"imagePullSecrets,omitempty"`
	Resources                 *corev1.ResourceRequirements      `json:"resources,omitempty"`
	NodeSelector              map[string]string                 `json:"nodeSelector,omitempty"`
	Tolerations               []corev1.Toleration               `json:"tolerations,omitempty"`
	Affinity                  *corev1.Affinity                  `json:"affinity,omitempty"`
	PriorityClassName         string                            `json:"priorityClassName,omitempty"`
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	PodLabels                 map[string]string                 `json:"podLabels,omitempty"`
	PodAnnotations            map[string]string                 `json:"podAnnotations,omitempty"`
	Service                   stsv1alpha1.ServiceOptions        `json:"service,omitempty"`
	// PodSecurityContext and SecurityContext replace the hardened ones the builder sets (for a
	// platform that assigns user IDs itself, such as OpenShift's restricted SCC).
	PodSecurityContext *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	SecurityContext    *corev1.SecurityContext    `json:"securityContext,omitempty"`
}

// Apply returns tableServer as the operator runs it; tableServer and d are left alone (the
// client decodes the API server's answer into a written object's fields, and several
// reconciles run at once), and nil defaults return tableServer itself.
//
// A Redis backend that names no Redis gets d.Redis, with the database, credentials and TLS the
// resource sets itself in place of the default's. Every other spec field the resource leaves
// empty gets a copy of d's value. The resource wins field by field: resources, nodeSelector,
// tolerations, affinity and spread constraints as a whole (half of the resource's and half of
// the default's could describe a pod that neither meant, such as a request above a limit);
// podLabels, podAnnotations and the Service's annotations key by key. The Service's type
// applies to a resource whose type is ClusterIP: the API server writes ClusterIP into every
// resource that names none.
func (d *Defaults) Apply(tableServer *stsv1alpha1.SimpleTableServer) *stsv1alpha1.SimpleTableServer {
	if d == nil {
		return tableServer
	}
	out := tableServer.DeepCopy()
	d.applyRedis(out)
	s := &out.Spec
	if s.ImagePullPolicy == "" {
		s.ImagePullPolicy = d.ImagePullPolicy
	}
	if len(s.ImagePullSecrets) == 0 {
		s.ImagePullSecrets = slices.Clone(d.ImagePullSecrets)
	}
	if d.Resources != nil && len(s.Resources.Requests) == 0 && len(s.Resources.Limits) == 0 && len(s.Resources.Claims) == 0 {
		s.Resources = *d.Resources.DeepCopy()
	}
	if len(s.NodeSelector) == 0 {
		s.NodeSelector = maps.Clone(d.NodeSelector)
	}
	if len(s.Tolerations) == 0 {
		s.Tolerations = deepCopied(d.Tolerations)
	}
	if s.Affinity == nil {
		s.Affinity = d.Affinity.DeepCopy()
	}
	if s.PriorityClassName == "" {
		s.PriorityClassName = d.PriorityClassName
	}
	if len(s.TopologySpreadConstraints) == 0 {
		s.TopologySpreadConstraints = deepCopied(d.TopologySpreadConstraints)
	}
	s.PodLabels = mergedUnlessEmpty(d.PodLabels, s.PodLabels)
	s.PodAnnotations = mergedUnlessEmpty(d.PodAnnotations, s.PodAnnotations)
	if s.Service.Type == "" || s.Service.Type == corev1.ServiceTypeClusterIP && d.Service.Type != "" {
		s.Service.Type = d.Service.Type
	}
	s.Service.Annotations = mergedUnlessEmpty(d.Service.Annotations, s.Service.Annotations)
	return out
}

// applyRedis gives tableServer's Redis backend, when it names no Redis, the default one.
func (d *Defaults) applyRedis(tableServer *stsv1alpha1.SimpleTableServer) {
	if !Shared(tableServer) || d.Redis == nil || NamesRedis(tableServer) {
		return
	}
	if tableServer.Spec.Backend.Redis == nil {
		tableServer.Spec.Backend.Redis = &stsv1alpha1.RedisBackend{}
	}
	own := tableServer.Spec.Backend.Redis.RedisConnection
	c := d.Redis.DeepCopy()
	if own.Database != nil {
		c.Database = own.Database
	}
	if own.CredentialsSecret != nil {
		c.CredentialsSecret = own.CredentialsSecret
	}
	if own.TLS != nil {
		c.TLS = own.TLS
	}
	tableServer.Spec.Backend.Redis.RedisConnection = *c
}

// NamesRedis says whether tableServer's Redis backend names its own Redis.
func NamesRedis(tableServer *stsv1alpha1.SimpleTableServer) bool {
	r := tableServer.Spec.Backend.Redis
	return r != nil && (r.Address != "" || r.Sentinel != nil)
}

// deepCopied is a deep copy of in, nil for nil.
func deepCopied[T any, P interface {
	*T
	DeepCopy() *T
}](in []T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		out[i] = *P(&in[i]).DeepCopy()
	}
	return out
}

// mergedUnlessEmpty is Merged, but own as it is (nil stays nil) when there is nothing to add.
func mergedUnlessEmpty(defaults, own map[string]string) map[string]string {
	if len(defaults) == 0 {
		return own
	}
	return Merged(defaults, own)
}

// podSecurity returns the pod and container security contexts of d, each the hardened default
// when d does not set it.
func (d *Defaults) podSecurity() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	pod := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](nonRootID),
		RunAsGroup:     ptr.To[int64](nonRootID),
		FSGroup:        ptr.To[int64](nonRootID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	container := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if d != nil && d.PodSecurityContext != nil {
		pod = d.PodSecurityContext.DeepCopy()
	}
	if d != nil && d.SecurityContext != nil {
		container = d.SecurityContext.DeepCopy()
	}
	return pod, container
}
