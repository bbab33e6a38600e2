package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A word on names: a "dataset" is what this resource declares, a source of lines (a ConfigMap
// key, a Secret key or files on a claim). The table server loads each dataset at startup into a
// "list" of the same name, which clients address as FILENAME (/sts/READ?FILENAME=<list>).

// SimpleTableServer runs one HTTP Simple Table Server (the JMeter plugin's protocol, port 9191)
// that loads the declared datasets at startup and serves their lines to load generators at
// http://<name>.<namespace>.svc:9191/sts/.
//
// The name must be a DNS label (it names the Service).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=tables
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
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
type SimpleTableServerSpec struct {
	// datasets are loaded into the server at startup, each into the list of the same name.
	// At most 64; the names are unique.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(d, self.exists_one(e, e.name == d.name))",message="dataset names must be unique"
	// +optional
	Datasets []Dataset `json:"datasets,omitempty"`

	// storage is the server's writable dataset directory: where SAVE writes files and INITFILE
	// reads them. Absent, it is an emptyDir that lives as long as the pod. It cannot be changed
	// after creation.
	// +optional
	Storage *Storage `json:"storage,omitempty"`

	// server holds the table server's own options.
	// +kubebuilder:default={}
	// +optional
	Server ServerOptions `json:"server,omitempty"`

	// datasetUpdatePolicy says what happens when a ConfigMap or Secret that a dataset reads
	// changes. Keep (the default) leaves the running lists alone, so a test in progress is never
	// disturbed, and reports the change in the DatasetsLoaded condition. Reload replaces just the
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

	// image runs the table server (its binary at /sts). Defaults to the operator's own image.
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
	// expression (Java syntax) is loaded under its own file name, not the dataset's name.
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
}

// Charsets name the character sets the table server uses, as Java names them (UTF-8,
// ISO-8859-1, windows-1252, ...).
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
	// observedGeneration is the spec generation that the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the server answers), DatasetsLoaded (every dataset is in the server
	// and matches its source), Progressing (a rollout is under way), Degraded (something needs
	// attention). Each has a one-word reason.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// endpoint is the base URL load generators use: http://<name>.<namespace>.svc:9191.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// lists are the server's lists and their lengths at lastStatusTime, sorted by name: the
	// datasets plus any list that clients created (at most the first 256).
	// +listType=map
	// +listMapKey=name
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
}

// ListStatus is one list in the table server.
type ListStatus struct {
	// name of the list (FILENAME).
	Name string `json:"name"`
	// length is the number of lines in the list.
	Length int64 `json:"length"`
}

// Condition types of a SimpleTableServer.
const (
	// ConditionReady is True when the table server answers STATUS.
	ConditionReady = "Ready"
	// ConditionDatasetsLoaded is True when every dataset is loaded and (with reason Loaded)
	// matches its source.
	ConditionDatasetsLoaded = "DatasetsLoaded"
	// ConditionProgressing is True while the table server's Deployment rolls out.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs a user's attention.
	ConditionDegraded = "Degraded"
)

// Condition reasons of a SimpleTableServer: one word each, for tools that match on them.
const (
	// ReasonServing: the server answered STATUS.
	ReasonServing = "Serving"
	// ReasonStarting: the server has not answered yet and its Deployment is not available.
	ReasonStarting = "Starting"
	// ReasonUnreachable: the Deployment is available but the server did not answer.
	ReasonUnreachable = "Unreachable"
	// ReasonSourceMissing: a ConfigMap, Secret or key that a dataset reads does not exist.
	ReasonSourceMissing = "SourceMissing"
	// ReasonLoaded: every dataset is in the server as its source holds it.
	ReasonLoaded = "Loaded"
	// ReasonSourceChanged: a source changed after it was loaded and the policy is Keep.
	ReasonSourceChanged = "SourceChanged"
	// ReasonNotLoaded: the server answers but lacks a dataset's list.
	ReasonNotLoaded = "NotLoaded"
	// ReasonReloadFailed: the server refused a changed dataset (policy Reload).
	ReasonReloadFailed = "ReloadFailed"
	// ReasonDeploying: the Deployment is rolling out.
	ReasonDeploying = "Deploying"
	// ReasonDeployed: the Deployment has its one pod available at the current template.
	ReasonDeployed = "Deployed"
	// ReasonApplyFailed: the API server refused an object the operator builds.
	ReasonApplyFailed = "ApplyFailed"
	// ReasonHealthy: nothing needs attention.
	ReasonHealthy = "Healthy"
)

// +kubebuilder:object:root=true

// SimpleTableServerList is a list of SimpleTableServers.
type SimpleTableServerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the SimpleTableServers.
	Items []SimpleTableServer `json:"items"`
}
