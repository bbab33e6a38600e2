package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A word on names: a "dataset" is what this resource declares, a source of lines (a ConfigMap
// key, a Secret key or files on a claim). The table server loads each dataset at startup into a
// "list" of the same name, which clients address as FILENAME (/sts/READ?FILENAME=<list>).

// SimpleTableServer runs an HTTP Simple Table Server (the JMeter plugin's protocol, port 9191)
// that loads the declared datasets at startup and serves their lines to load generators at
// http://<name>.<namespace>.svc:9191/sts/: one pod keeping the lists in memory, or, with a
// Redis or Valkey backend, several pods sharing the lists there.
//
// The name must be a DNS label (it names the Service).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=stserver,categories=loadtest
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Backend",type=string,JSONPath=`.spec.backend.type`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Lists",type=integer,JSONPath=`.status.listCount`
// +kubebuilder:printcolumn:name="Lines",type=integer,JSONPath=`.status.totalLines`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label (at most 63 lowercase letters, digits and '-', starting with a letter): it names the Service"
type SimpleTableServer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the datasets and how the table server runs.
	// +required
	Spec SimpleTableServerSpec `json:"spec"`

	// status reports what the operator and the table server observed.
	// +optional
	Status SimpleTableServerStatus `json:"status,omitempty"`
}

// SimpleTableServerSpec declares the datasets and how the table server runs.
//
// +kubebuilder:validation:XValidation:rule="has(self.storage) == has(oldSelf.storage)",message="storage cannot be added or removed: the saved data would be lost; create a new SimpleTableServer instead"
// +kubebuilder:validation:XValidation:rule="self.replicas <= 1 || self.backend.type == 'redis'",message="replicas above 1 need a shared backend: set backend.type to redis (table servers with the memory backend would each hold their own lists and hand out the same lines)"
// +kubebuilder:validation:XValidation:rule="self.replicas <= 1 || !has(self.storage) || !has(self.storage.size)",message="storage.size makes a ReadWriteOnce claim, which several replicas cannot share: use storage.existingClaim with a ReadWriteMany claim, or leave storage out"
// +kubebuilder:validation:XValidation:rule="self.backend.type == 'memory' || !has(self.server) || self.server.durability != 'Enabled'",message="server.durability Enabled applies to the memory backend only: with redis the lists live in Redis (use its persistence and backend.redis.minReplicas)"
// +kubebuilder:validation:XValidation:rule="self.backend.type == 'memory' || !has(self.server) || !has(self.server.limits) || !has(self.server.limits.maxTotalBytes)",message="server.limits.maxTotalBytes applies to the memory backend only: with redis, Redis' maxmemory bounds the lists"
type SimpleTableServerSpec struct {
	// backend is where the table servers keep the lists: memory (the default: one pod holds
	// them, optionally journalled to spec.storage) or redis (a Redis or Valkey that several pods
	// share, so that spec.replicas can be above 1). It cannot be changed after creation.
	// +kubebuilder:default={type: memory}
	// +optional
	Backend Backend `json:"backend,omitempty"`

	// replicas is the number of table-server pods behind the Service, between 1 and 64. Above 1
	// only with backend redis: the pods then share the lists, spread over nodes, roll one at a
	// time, and a PodDisruptionBudget lets at most one be evicted at once.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// datasets are loaded into the server at startup, each into the list of the same name.
	// At most 64; the names are unique.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(d, self.exists_one(e, e.name == d.name))",message="dataset names must be unique"
	// +optional
	Datasets []Dataset `json:"datasets,omitempty"`

	// storage is the server's writable dataset directory: where SAVE writes files and INITFILE
	// reads them, and where the journal of spec.server.durability lives (its "state" folder).
	// Absent, it is an emptyDir that lives as long as the pod. It cannot be changed after
	// creation.
	// +optional
	Storage *Storage `json:"storage,omitempty"`

	// server holds the table server's own options.
	// +kubebuilder:default={}
	// +optional
	Server ServerOptions `json:"server,omitempty"`

	// datasetUpdatePolicy says what happens when a ConfigMap or Secret that a dataset reads
	// changes. Keep (the default) leaves the running lists alone, so a test in progress is never
	// disturbed, and reports the change in the DatasetsInSync condition. Reload replaces just the
	// changed lists in the running server, without a restart; other lists are untouched.
	// Datasets on a claim are never reloaded.
	// +kubebuilder:default=Keep
	// +optional
	DatasetUpdatePolicy DatasetUpdatePolicy `json:"datasetUpdatePolicy,omitempty"`

	// statusRefreshInterval is how often the operator reads the server's STATUS into
	// status.lists, between 1s and 1h.
	// +kubebuilder:default="10s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="statusRefreshInterval must be between 1s and 1h, e.g. 10s"
	// +optional
	StatusRefreshInterval *metav1.Duration `json:"statusRefreshInterval,omitempty"`

	// image runs the table server (its binary at /sts). When empty, a new server gets the
	// operator's default image (its own), and a running server keeps the image it was started
	// with, even after an operator upgrade changes the default: an upgrade never restarts a
	// server for a new image. status.image shows the image in use. To move a server to the
	// current default, set this field, or annotate the resource with
	// sts.tableserver.dev/restartedAt (any new value restarts the server with the default image).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// imagePullPolicy of the table server container.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// imagePullSecrets name Secrets in this namespace used to pull the image.
	// +listType=atomic
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// resources of the table server container. The lists live in memory: size the memory
	// limit for the datasets plus what clients add.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// nodeSelector constrains the table server pod to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// tolerations of the table server pod.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// affinity of the table server pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// podLabels are added to the table server pod. The operator's selector labels
	// (app.kubernetes.io/name and app.kubernetes.io/instance) cannot be set here.
	// +kubebuilder:validation:XValidation:rule="!('app.kubernetes.io/name' in self) && !('app.kubernetes.io/instance' in self)",message="podLabels must not set app.kubernetes.io/name or app.kubernetes.io/instance: the operator selects the pod with them"
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// podAnnotations are added to the table server pod.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// service configures the Service in front of the server.
	// +kubebuilder:default={}
	// +optional
	Service ServiceOptions `json:"service,omitempty"`

	// priorityClassName of the table server pod.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// networkPolicy, when set, makes a NetworkPolicy that lets only these peers, and the
	// operator's namespace (which reads STATUS), reach the table servers' port; from: [] lets
	// only the operator in. Absent, the operator makes none. It needs a network plugin that
	// enforces NetworkPolicies.
	// +optional
	NetworkPolicy *NetworkPolicy `json:"networkPolicy,omitempty"`

	// topologySpreadConstraints of the table-server pods. When absent, pods of a resource with
	// several replicas are spread over nodes and zones where the scheduler can (ScheduleAnyway),
	// so that a lost node takes at most its share of them.
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// NetworkPolicy says who may reach the table servers.
type NetworkPolicy struct {
	// from are the peers allowed to reach port 9191: pods by podSelector, namespaces by
	// namespaceSelector (both in one peer: those pods in those namespaces), or ipBlock.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	From []networkingv1.NetworkPolicyPeer `json:"from,omitempty"`
}

// Backend says where the table servers keep their lists.
//
// +kubebuilder:validation:XValidation:rule="self.type == oldSelf.type",message="backend.type cannot be changed: the lists live in the old backend and would be lost; create a new SimpleTableServer (EXPORT or SAVE the lists first)"
// +kubebuilder:validation:XValidation:rule="self.type == 'redis' || !has(self.redis)",message="backend.redis applies only with type redis"
type Backend struct {
	// type is memory or redis.
	// +kubebuilder:default=memory
	// +kubebuilder:validation:Enum=memory;redis
	// +optional
	Type BackendType `json:"type,omitempty"`

	// redis says which Redis or Valkey holds the lists. When it names neither an address nor a
	// sentinel, the operator's default Redis applies (the chart's tableServer.defaultRedis);
	// database, credentialsSecret and tls set here then replace the default's (a team's own ACL
	// user on the shared Redis, say).
	// +optional
	Redis *RedisBackend `json:"redis,omitempty"`
}

// BackendType names a storage backend.
// +kubebuilder:validation:Enum=memory;redis
type BackendType string

const (
	// BackendMemory keeps the lists in the table server's memory: one pod.
	BackendMemory BackendType = "memory"
	// BackendRedis keeps the lists in a Redis or Valkey that several pods share.
	BackendRedis BackendType = "redis"
)

// RedisBackend is a Redis or Valkey and how this resource uses it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas == 0 || !has(self.cluster) || !self.cluster",message="minReplicas is not supported with cluster (Redis WAIT would answer for one shard only)"
type RedisBackend struct {
	RedisConnection `json:",inline"`

	// keyPrefix starts every Redis key of this resource's lists (each list NAME is the key
	// <keyPrefix>{NAME}). The default, sts:<namespace>/<name>:, keeps two resources apart on
	// one Redis; a resource created again under the same name finds its lists as they were. A
	// new prefix starts from the datasets again (the old keys stay in Redis).
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!self.contains('{') && !self.contains('}')",message="keyPrefix must not contain '{' or '}': each list's name goes in braces (a Redis Cluster hash tag)"
	// +optional
	KeyPrefix string `json:"keyPrefix,omitempty"`

	// minReplicas makes every change wait until this many Redis replicas hold it (Redis WAIT)
	// before it is acknowledged, so that a failover loses no acknowledged change; 0 (the
	// default) acknowledges what the master holds. Not with cluster.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	// +optional
	MinReplicas int32 `json:"minReplicas,omitempty"`

	// minReplicasTimeout is how long a change waits for minReplicas before it is answered as not
	// recorded (HTTP 503), between 10ms and 1m; the table server's default (2s) when absent.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10ms') && duration(self) <= duration('1m')",message="minReplicasTimeout must be between 10ms and 1m, e.g. 2s"
	// +optional
	MinReplicasTimeout *metav1.Duration `json:"minReplicasTimeout,omitempty"`
}

// RedisConnection says how to reach a Redis or Valkey: one address (a standalone server, a
// managed service's endpoint, or with cluster a node of a Redis Cluster) or a Sentinel group.
// The operator's default Redis (the chart's tableServer.defaultRedis) has the same fields.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.address) && has(self.sentinel))",message="set address or sentinel, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.cluster) || !self.cluster || has(self.address)",message="cluster needs address, a node of the Redis Cluster"
// +kubebuilder:validation:XValidation:rule="!has(self.cluster) || !self.cluster || !has(self.database) || self.database == 0",message="a Redis Cluster has only database 0"
type RedisConnection struct {
	// address is host:port of the Redis or Valkey, such as redis.redis.svc:6379.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s/@]+:[0-9]{1,5}$`
	// +optional
	Address string `json:"address,omitempty"`

	// sentinel finds the master through Redis Sentinel, which follows failovers.
	// +optional
	Sentinel *RedisSentinel `json:"sentinel,omitempty"`

	// cluster makes address a node of a Redis Cluster; the lists spread over its shards.
	// +optional
	Cluster *bool `json:"cluster,omitempty"`

	// database is the Redis database number (SELECT), 0 when absent.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	// +optional
	Database *int32 `json:"database,omitempty"`

	// credentialsSecret names a Secret in the resource's namespace holding the password (and
	// the ACL username) the table servers log in with.
	// +optional
	CredentialsSecret *RedisCredentials `json:"credentialsSecret,omitempty"`

	// tls connects over TLS.
	// +optional
	TLS *RedisTLS `json:"tls,omitempty"`
}

// RedisSentinel is a Sentinel group and the name of the master it watches.
type RedisSentinel struct {
	// masterName is the name the sentinels know the master by (sentinel monitor <name> ...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +required
	MasterName string `json:"masterName"`

	// addresses are host:port of the sentinels, at least one.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=512
	// +kubebuilder:validation:items:Pattern=`^[^\s/@,]+:[0-9]{1,5}$`
	// +listType=atomic
	// +required
	Addresses []string `json:"addresses"`
}

// RedisCredentials names a Secret and its keys.
type RedisCredentials struct {
	// name of the Secret, in the resource's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// passwordKey is the key holding the password; "password" when absent.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	PasswordKey string `json:"passwordKey,omitempty"`

	// usernameKey is the key holding the ACL username (Redis 6 and later); without it the
	// table servers log in as the default user.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	UsernameKey string `json:"usernameKey,omitempty"`
}

// RedisTLS says how to check the Redis server's certificate.
//
// +kubebuilder:validation:XValidation:rule="!has(self.caSecret) || self.enabled",message="tls.caSecret applies only with tls.enabled"
type RedisTLS struct {
	// enabled connects with TLS (rediss://).
	// +required
	Enabled bool `json:"enabled"`

	// caSecret names a Secret key holding the PEM certificate authorities the server's
	// certificate is checked against, instead of the system's.
	// +optional
	CASecret *KeySelector `json:"caSecret,omitempty"`
}

// Dataset is one named source of lines, loaded at startup into the list of the same name.
// It has exactly one source: configMap, secret or persistentVolumeClaim.
//
// +kubebuilder:validation:XValidation:rule="(has(self.configMap) ? 1 : 0) + (has(self.secret) ? 1 : 0) + (has(self.persistentVolumeClaim) ? 1 : 0) == 1",message="set exactly one source per dataset: configMap, secret or persistentVolumeClaim"
type Dataset struct {
	// name is the list name clients send as FILENAME. The table server's file-name rules
	// apply: 1 to 128 characters, no '/', '\' or ':', and not "." or ".."; nor '=', which
	// separates the name from the path in the server's --load flag.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('/') && !self.contains('\\\\') && !self.contains(':')",message="dataset name must not contain '/', '\\' or ':' (the table server's file-name rules)"
	// +kubebuilder:validation:XValidation:rule="self != '.' && self != '..'",message="dataset name must not be '.' or '..'"
	// +kubebuilder:validation:XValidation:rule="!self.contains('=')",message="dataset name must not contain '=': the table server's --load LIST=PATH flag splits at the first '='"
	// +required
	Name string `json:"name"`

	// configMap reads the lines from a key of a ConfigMap in this namespace (at most 1 MiB).
	// +optional
	ConfigMap *KeySelector `json:"configMap,omitempty"`

	// secret reads the lines from a key of a Secret in this namespace (at most 1 MiB).
	// +optional
	Secret *KeySelector `json:"secret,omitempty"`

	// persistentVolumeClaim reads the lines from a file on a claim in this namespace, which is
	// mounted read-only; use it for datasets larger than a ConfigMap can hold.
	// +optional
	PersistentVolumeClaim *ClaimSource `json:"persistentVolumeClaim,omitempty"`

	// maxDeliveries overrides server.leases.maxDeliveries for this list: a line read with a
	// lease that comes back this many times unacknowledged goes to the list <name>.dead
	// instead; 0 never does.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxDeliveries *int32 `json:"maxDeliveries,omitempty"`
}

// KeySelector names a key of a ConfigMap or Secret in the resource's namespace.
type KeySelector struct {
	// name of the ConfigMap or Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// key whose value holds the lines.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +required
	Key string `json:"key"`
}

// ClaimSource names a file, or a directory of files, on a PersistentVolumeClaim.
//
// +kubebuilder:validation:XValidation:rule="!has(self.match) || !self.path.contains('=')",message="path cannot contain '=' when match is set (the table server reads its directory flag as DIR=REGEX): rename the directory"
type ClaimSource struct {
	// claimName of a PersistentVolumeClaim in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClaimName string `json:"claimName"`

	// path of the file relative to the claim's root, loaded under the dataset's name. With
	// match, path is a directory ("." for the root).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.matches('(^|/)[.][.](/|$)')",message="path must be relative to the claim's root and must not contain '..'"
	// +required
	Path string `json:"path"`

	// match makes path a directory: every file in it whose whole name matches this regular
	// expression (Java syntax) is loaded under its own file name, not the dataset's name. The
	// operator checks it with the table server's own engine: a pattern it cannot compile
	// stalls the resource (reason InvalidSpec) before any pod is changed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Match string `json:"match,omitempty"`
}

// Storage is the server's writable dataset directory: an existing claim, or a claim of the given
// size that the operator creates and deletes with the resource.
//
// +kubebuilder:validation:XValidation:rule="has(self.existingClaim) != has(self.size)",message="set exactly one of existingClaim (a claim you provide) or size (a claim the operator creates)"
// +kubebuilder:validation:XValidation:rule="!has(self.storageClassName) || has(self.size)",message="storageClassName applies only with size (a claim the operator creates)"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || (isQuantity(string(self.size)) && quantity(string(self.size)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self.size)).compareTo(quantity('64Ti')) <= 0)",message="size must be between 1Mi and 64Ti, e.g. 1Gi"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storage cannot be changed: the saved data would be lost; create a new SimpleTableServer instead"
type Storage struct {
	// existingClaim is a PersistentVolumeClaim in this namespace that the operator uses but does
	// not own.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ExistingClaim string `json:"existingClaim,omitempty"`

	// size of a ReadWriteOnce claim named <name>-data that the operator creates and owns.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName of the claim the operator creates; the cluster default when absent.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// ServerOptions mirror the table server's own flags.
//
// +kubebuilder:validation:XValidation:rule="!has(self.fsyncInterval) || self.fsyncPolicy == 'Interval'",message="fsyncInterval applies only with fsyncPolicy Interval"
type ServerOptions struct {
	// addTimestamp is SAVE's default for ADD_TIMESTAMP: prefix saved file names with the time.
	// +kubebuilder:default=true
	// +optional
	AddTimestamp *bool `json:"addTimestamp,omitempty"`

	// charsets of dataset files and answers.
	// +kubebuilder:default={}
	// +optional
	Charsets Charsets `json:"charsets,omitempty"`

	// allowStop lets /sts/STOP shut the server down. Off by default: a stopped server restarts
	// with only its datasets, and whatever clients had changed is gone.
	// +kubebuilder:default=false
	// +optional
	AllowStop *bool `json:"allowStop,omitempty"`

	// authTokenSecret names a Secret key holding a token that every request must carry
	// (Authorization: Bearer <token>). Without it the server is open to anything that reaches
	// the Service.
	// +optional
	AuthTokenSecret *KeySelector `json:"authTokenSecret,omitempty"`

	// durability keeps the lists across restarts: the server records every change in a journal
	// in the "state" folder of its storage before it answers, and restores the lists at
	// startup, so a line consumed before a restart is never served again. Memory backend only.
	// Auto (the default) turns it on when spec.storage is set (a claim outlives the pod) and off with the emptyDir.
	// Enabled turns it on with the emptyDir too, which then survives a container restart (an
	// out-of-memory kill) but not the pod's replacement. Disabled turns it off.
	// +kubebuilder:default=Auto
	// +optional
	Durability Durability `json:"durability,omitempty"`

	// fsyncPolicy says when a journalled change is on disk. Always (the default) answers a
	// command only after its change is synced: nothing acknowledged is lost in a crash.
	// Interval syncs every fsyncInterval: faster, but a crash loses the changes of the last
	// interval, whose lines may then be served again. Used only when durability is on.
	// +kubebuilder:default=Always
	// +optional
	FsyncPolicy FsyncPolicy `json:"fsyncPolicy,omitempty"`

	// fsyncInterval is the time between syncs with fsyncPolicy Interval, between 1ms and 1m;
	// the table server's default when absent.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('1m')",message="fsyncInterval must be between 1ms and 1m, e.g. 100ms"
	// +optional
	FsyncInterval *metav1.Duration `json:"fsyncInterval,omitempty"`

	// limits protect the server's memory: a command that would exceed one is refused with a KO
	// naming the limit. Each absent limit is the table server's default.
	// +optional
	Limits ServerLimits `json:"limits,omitempty"`

	// leases set how reads with a lease (LEASE=<ms>) and retried commands (REQUEST_ID) behave.
	// Each absent field is the table server's default.
	// +optional
	Leases LeaseOptions `json:"leases,omitempty"`

	// ui bounds the web page's live streams (/ui/). Each absent field is the table server's
	// default.
	// +optional
	UI UIOptions `json:"ui,omitempty"`
}

// UIOptions mirror the table server's flags for its web page's live streams, which a browser
// keeps open while it shows the overview: each holds a connection and its buffers.
type UIOptions struct {
	// maxStreams is the most live streams of all browsers together, between 1 and 10000; the
	// table server's default (64) when absent. One more is refused (429) and the page says so.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MaxStreams *int32 `json:"maxStreams,omitempty"`

	// maxStreamsPerSession is the most live streams of one browser session, between 1 and
	// 10000; the table server's default (8) when absent.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MaxStreamsPerSession *int32 `json:"maxStreamsPerSession,omitempty"`

	// streamWriteTimeout is how long a write to a live stream may wait for its browser to read
	// before the stream is dropped, between 1s and 10m; the table server's default (10s) when
	// absent.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('10m')",message="streamWriteTimeout must be between 1s and 10m, e.g. 10s"
	// +optional
	StreamWriteTimeout *metav1.Duration `json:"streamWriteTimeout,omitempty"`
}

// LeaseOptions mirror the table server's lease flags. A read with LEASE=<ms> holds its lines
// until ACK; unacknowledged, they go back to the list when the lease runs out.
type LeaseOptions struct {
	// maxLease is the longest lease a read may ask for and an EXTEND may give, between 1s and
	// 24h; the table server's default (1h) when absent.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="maxLease must be between 1s and 24h, e.g. 5m"
	// +optional
	MaxLease *metav1.Duration `json:"maxLease,omitempty"`

	// maxDeliveries sends a leased line to the list <name>.dead instead of back to its list once
	// it has come back this many times unacknowledged, so that a line every client fails on
	// cannot loop forever; 0 (the default) never does. A dataset's maxDeliveries overrides it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxDeliveries *int32 `json:"maxDeliveries,omitempty"`

	// requestIDWindow is how long the answer of a command sent with REQUEST_ID is kept for its
	// retries, between 1s and 24h; the table server's default (5m) when absent.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="requestIDWindow must be between 1s and 24h, e.g. 5m"
	// +optional
	RequestIDWindow *metav1.Duration `json:"requestIDWindow,omitempty"`
}

// Durability says whether the table server journals its lists to survive restarts.
// +kubebuilder:validation:Enum=Auto;Enabled;Disabled
type Durability string

const (
	// DurabilityAuto journals when spec.storage is set.
	DurabilityAuto Durability = "Auto"
	// DurabilityEnabled journals to whatever the storage is, the emptyDir included.
	DurabilityEnabled Durability = "Enabled"
	// DurabilityDisabled keeps the lists in memory only.
	DurabilityDisabled Durability = "Disabled"
)

// FsyncPolicy says when the journal is synced to disk.
// +kubebuilder:validation:Enum=Always;Interval
type FsyncPolicy string

const (
	// FsyncAlways syncs every change before it is acknowledged.
	FsyncAlways FsyncPolicy = "Always"
	// FsyncInterval syncs every fsyncInterval.
	FsyncInterval FsyncPolicy = "Interval"
)

// ServerLimits bound what clients can make the table server hold.
type ServerLimits struct {
	// maxLinesPerList is the most lines one list may hold.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxLinesPerList *int64 `json:"maxLinesPerList,omitempty"`

	// maxTotalBytes is the memory budget of the lists, between 1Ki and 1Ti, e.g. 512Mi: each
	// line's text and bookkeeping, each list, lease, REQUEST_ID outcome and UNIQUE index entry
	// (README, Limits). The
	// server's memory stays within twice the budget and 64Mi. Unset, with a memory limit on the
	// table server, it is the largest budget that bound fits: (limit - 64Mi) / 2.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('1Ki')) >= 0 && quantity(string(self)).compareTo(quantity('1Ti')) <= 0",message="maxTotalBytes must be between 1Ki and 1Ti, e.g. 512Mi"
	// +optional
	MaxTotalBytes *resource.Quantity `json:"maxTotalBytes,omitempty"`

	// maxLineBytes is the longest line the server accepts, in bytes, between 1 and 67108864
	// (64 MiB).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=67108864
	// +optional
	MaxLineBytes *int32 `json:"maxLineBytes,omitempty"`

	// maxLists is the most lists the server may hold (the table server's default: 10000); a
	// command that would create one more is refused. Lists are what STATUS and /metrics show.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000000
	// +optional
	MaxLists *int64 `json:"maxLists,omitempty"`

	// maxNameBytes is the longest list name (FILENAME) accepted, in bytes, between 1 and 1024 (the
	// default, and what status.lists can show).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	MaxNameBytes *int32 `json:"maxNameBytes,omitempty"`

	// minFreeBytes is the free space a SAVE must leave on the storage volume, so that the journal
	// on it can still write, between 0 (no check) and 1Ti; the table server's default (64Mi)
	// when absent.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('0')) >= 0 && quantity(string(self)).compareTo(quantity('1Ti')) <= 0",message="minFreeBytes must be between 0 and 1Ti, e.g. 64Mi"
	// +optional
	MinFreeBytes *resource.Quantity `json:"minFreeBytes,omitempty"`

	// maxWait is the longest a blocking read (WAIT=<milliseconds>) may wait for a line, at
	// most 1h; longer requests are capped.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('1h')",message="maxWait must be at most 1h, e.g. 30s"
	// +optional
	MaxWait *metav1.Duration `json:"maxWait,omitempty"`

	// maxBodyBytes is the largest request body the server reads (a LOAD's file, a form, an
	// upload from the web page), between 1Ki and 1Gi; the table server's default (16Mi) when
	// absent. A larger body is refused (413) before it is read.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('1Ki')) >= 0 && quantity(string(self)).compareTo(quantity('1Gi')) <= 0",message="maxBodyBytes must be between 1Ki and 1Gi, e.g. 16Mi"
	// +optional
	MaxBodyBytes *resource.Quantity `json:"maxBodyBytes,omitempty"`

	// regexTimeout is the time limit of all the regular-expression matches of one FIND together,
	// between 1ms and 1m; the table server's default (1s) when absent. A FIND past it is answered
	// with a KO, and a list's FINDs take their turns, so one list's costly patterns cannot hold
	// up another list's FIND for longer than this.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1ms') && duration(self) <= duration('1m')",message="regexTimeout must be between 1ms and 1m, e.g. 1s"
	// +optional
	RegexTimeout *metav1.Duration `json:"regexTimeout,omitempty"`
}

// Charsets name the character sets the table server uses, as Java names them (UTF-8,
// ISO-8859-1, windows-1252, ...). The operator checks each name against the table server's
// charsets: an unknown one stalls the resource (reason InvalidSpec) before any pod is changed.
type Charsets struct {
	// read is the charset of dataset files read at startup and by INITFILE.
	// +kubebuilder:default=UTF-8
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.:+]*$`
	// +optional
	Read string `json:"read,omitempty"`

	// write is the charset of files written by SAVE.
	// +kubebuilder:default=UTF-8
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.:+]*$`
	// +optional
	Write string `json:"write,omitempty"`

	// response is the charset of HTTP answers.
	// +kubebuilder:default=UTF-8
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.:+]*$`
	// +optional
	Response string `json:"response,omitempty"`
}

// ServiceOptions configure the Service in front of the table server.
type ServiceOptions struct {
	// type of the Service.
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`

	// annotations added to the Service.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DatasetUpdatePolicy says what a change to a dataset's ConfigMap or Secret does.
// +kubebuilder:validation:Enum=Keep;Reload
type DatasetUpdatePolicy string

const (
	// DatasetUpdateKeep leaves the running lists alone and reports the change in a condition.
	DatasetUpdateKeep DatasetUpdatePolicy = "Keep"
	// DatasetUpdateReload replaces the changed lists in the running server.
	DatasetUpdateReload DatasetUpdatePolicy = "Reload"
)

// SimpleTableServerStatus reports what the operator and the table server observed.
type SimpleTableServerStatus struct {
	// observedGeneration is the spec generation that the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions say whether the server is ready and, if not, whether the operator is still
	// converging or needs the user. Each condition has a one-word reason and the generation it
	// describes:
	//
	//   - Ready: True when the server's pods are rolled out, at least one is available, and the
	//     server answered STATUS with every dataset loaded. Otherwise False, with the reason of
	//     Reconciling or Stalled. Ready says the server serves: it stays True while Stalled
	//     reports a change that cannot be applied (a source deleted after loading, a refused
	//     reload, an invalid edit held back from the running pod).
	//   - Reconciling: True while the operator converges by itself: the Deployment rolls out
	//     (RollingOut), its pod is not available yet (WaitingForPod), the server does not answer
	//     (Unreachable: retried every statusRefreshInterval), the table servers cannot reach
	//     their Redis (BackendUnavailable), a ConfigMap or Secret could not be read
	//     (SourceUnreadable: the other conditions keep what they said before), not every replica is available yet (WaitingForPod,
	//     while Ready stays True), an API write failed (ApplyFailed) or a reload will be retried
	//     (ReloadFailed).
	//   - Stalled: True when progress needs the user: a source is missing (SourceMissing), the
	//     spec is one the server cannot run (InvalidSpec), an object could not be written
	//     (ApplyFailed: a name taken by another owner, an invalid or forbidden object), the pod
	//     never became available (RolloutStuck), the server lacks a dataset's list
	//     (NotLoaded), or it refused a changed dataset (ReloadFailed).
	//   - DatasetsLoaded: True when the server has a list for every dataset (Loaded).
	//   - DatasetsInSync: True when every ConfigMap and Secret dataset is loaded as its source
	//     holds it now (InSync). False with SourceChanged when a source changed after loading
	//     and the policy is Keep: drift to know about, not a fault; Ready stays True.
	//   - Reset: how the last reset (annotation sts.tableserver.dev/reset-at) went: True (Reset)
	//     when every dataset was reloaded, False (ResetFailed) when some could not be (the
	//     message says which and why; they keep their lines), Unknown (ResetPending) while it
	//     waits for the server. It does not change Ready.
	//
	// Reconciling and Stalled share one reason and message: those of the one that is True, or
	// Reconciled when nothing is left to do.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// endpoint is the base URL load generators use: http://<name>.<namespace>.svc:9191.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// uiPath is the path of the table server's web page under endpoint: <endpoint><uiPath>, or
	// from outside the cluster through kubectl port-forward to the Service.
	// +optional
	UIPath string `json:"uiPath,omitempty"`

	// image is the table server image the Deployment runs.
	// +optional
	Image string `json:"image,omitempty"`

	// replicas is the number of table-server pods of the current spec (the scale subresource's
	// status); availableReplicas, of all pods, those that serve.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// selector is the label selector of the table-server pods, for the scale subresource
	// (kubectl scale, autoscalers).
	// +optional
	Selector string `json:"selector,omitempty"`

	// lists are the server's lists and their lengths at lastStatusTime, sorted by name: the
	// datasets plus any list that clients created (at most the first 256).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Lists []ListStatus `json:"lists,omitempty"`

	// listCount is the number of lists in the server.
	// +optional
	ListCount int32 `json:"listCount,omitempty"`

	// totalLines is the number of lines in all lists.
	// +optional
	TotalLines int64 `json:"totalLines,omitempty"`

	// lastStatusTime is when the server's STATUS last reported a change in the lists. Readings
	// that find nothing new do not update it, so an idle server costs the API server no writes;
	// the Ready condition says whether the server still answers.
	// +optional
	LastStatusTime *metav1.Time `json:"lastStatusTime,omitempty"`

	// observedResetAt is the value of the annotation sts.tableserver.dev/reset-at that the
	// operator last handled: a reset is done once per value, so that a resync or an operator
	// restart does not reload the datasets again.
	// +optional
	ObservedResetAt string `json:"observedResetAt,omitempty"`

	// lastResetTime is when the table server last reloaded the datasets for that annotation.
	// +optional
	LastResetTime *metav1.Time `json:"lastResetTime,omitempty"`
}

// ListStatus is one list in the table server.
type ListStatus struct {
	// name of the list (FILENAME). Lists with longer names are counted in listCount and
	// totalLines but not listed.
	// +kubebuilder:validation:MaxLength=1024
	Name string `json:"name"`
	// length is the number of lines in the list, not counting leased ones.
	Length int64 `json:"length"`
	// leased is the number of lines held under leases: read, not acknowledged yet.
	// +optional
	Leased int64 `json:"leased,omitempty"`
	// returned is the number of leased lines that came back unacknowledged (expired or released).
	// +optional
	Returned int64 `json:"returned,omitempty"`
	// deadLettered is the number of leased lines sent to the list <name>.dead after
	// maxDeliveries returns.
	// +optional
	DeadLettered int64 `json:"deadLettered,omitempty"`
	// consumptionRate is how many lines a second the list lost between the operator's last two
	// readings of the server (statusRefreshInterval apart), in decimal with three significant
	// digits, such as "12.5"; absent while the list does not shrink. It is rewritten only when
	// it moves by more than a fifth, so that a steady consumption costs no status writes of its
	// own.
	// +optional
	ConsumptionRate string `json:"consumptionRate,omitempty"`
	// estimatedEmptyTime is when the list would be empty at consumptionRate; rewritten with it,
	// or when it moves by more than a fifth of the time left.
	// +optional
	EstimatedEmptyTime *metav1.Time `json:"estimatedEmptyTime,omitempty"`
}

// Condition types of a SimpleTableServer. Reconciling and Stalled follow kstatus: tools such as
// Flux and kpt read them (with observedGeneration) to tell in-progress from failed.
const (
	// ConditionReady is True when the server runs the current spec and serves every dataset.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the operator converges without the user's help.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when progress needs the user.
	ConditionStalled = "Stalled"
	// ConditionDatasetsLoaded is True when the server has a list for every dataset.
	ConditionDatasetsLoaded = "DatasetsLoaded"
	// ConditionDatasetsInSync is True when every ConfigMap and Secret dataset is loaded as its
	// source holds it now.
	ConditionDatasetsInSync = "DatasetsInSync"
	// ConditionReset says how the last reset (annotation sts.tableserver.dev/reset-at) went:
	// True when every dataset was reloaded, False when the server could not reload some (they
	// keep their lines), Unknown while it waits for the server. Absent before the first reset.
	ConditionReset = "Reset"
)

// Condition reasons of a SimpleTableServer: one word each, for tools that match on them.
const (
	// ReasonServing (Ready): the server runs the current spec and serves every dataset.
	ReasonServing = "Serving"
	// ReasonReconciled (Reconciling, Stalled): nothing is left to do.
	ReasonReconciled = "Reconciled"
	// ReasonRollingOut: the Deployment replaces its pod with one of the current spec.
	ReasonRollingOut = "RollingOut"
	// ReasonWaitingForPod: the pod of the current spec exists but is not available yet.
	ReasonWaitingForPod = "WaitingForPod"
	// ReasonUnreachable: the pod is available but the server does not answer STATUS.
	ReasonUnreachable = "Unreachable"
	// ReasonApplyFailed: the API server refused or failed an object the operator writes.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonInvalidSpec: the spec names a charset or pattern the table server cannot use.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonSourceMissing: a ConfigMap, Secret or key that the resource reads does not exist.
	ReasonSourceMissing = "SourceMissing"
	// ReasonSourceUnreadable: the API server failed or refused the read of a ConfigMap or Secret
	// that the resource reads (Stalled when it refused: the operator's RBAC).
	ReasonSourceUnreadable = "SourceUnreadable"
	// ReasonRolloutStuck: the Deployment exceeded its progress deadline.
	ReasonRolloutStuck = "RolloutStuck"
	// ReasonLoaded (DatasetsLoaded): the server has a list for every dataset.
	ReasonLoaded = "Loaded"
	// ReasonNotLoaded: the server answers but lacks a dataset's list.
	ReasonNotLoaded = "NotLoaded"
	// ReasonInSync (DatasetsInSync): every source is loaded as it is now.
	ReasonInSync = "InSync"
	// ReasonSourceChanged (DatasetsInSync): a source changed after it was loaded.
	ReasonSourceChanged = "SourceChanged"
	// ReasonReloadFailed: a changed dataset could not be pushed into the server (policy Reload).
	ReasonReloadFailed = "ReloadFailed"
	// ReasonBackendUnavailable: the table servers report that they cannot reach their Redis.
	ReasonBackendUnavailable = "BackendUnavailable"
	// ReasonReset (Reset): the server reloaded every dataset from its source.
	ReasonReset = "Reset"
	// ReasonResetFailed (Reset): the server could not reload some datasets.
	ReasonResetFailed = "ResetFailed"
	// ReasonResetPending (Reset): the reset waits for the server to serve the current spec or to
	// answer; it is tried again every statusRefreshInterval.
	ReasonResetPending = "ResetPending"
)

// Annotations a user puts on a SimpleTableServer.
const (
	// AnnotationRestartedAt, set to a new value (a timestamp, say), restarts the table server
	// and moves it to the operator's default image when spec.image is empty. The running lists
	// are lost unless durability is on.
	AnnotationRestartedAt = "sts.tableserver.dev/restartedAt"
	// AnnotationResetAt, set to a new value (a timestamp, say), reloads every dataset from its
	// source into the running table server, each list replaced at once, while the pods stay up:
	// the lists are back to their original content for the next test run. Done once per value
	// (status.observedResetAt).
	AnnotationResetAt = "sts.tableserver.dev/reset-at"
)

// +kubebuilder:object:root=true

// SimpleTableServerList is a list of SimpleTableServers.
type SimpleTableServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the SimpleTableServers.
	Items []SimpleTableServer `json:"items"`
}
