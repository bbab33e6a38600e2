package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// The table server's port and its name, fixed by the protocol. The server also answers
// /metrics on it.
const (
	ServerPort     = 9191
	serverPortName = "http"
	// ContainerName names the table server's container.
	ContainerName = "sts"
	// terminationGracePeriod gives a stopping server time to finish the commands in flight and
	// flush its journal (the server stops on SIGTERM within its own --shutdown-timeout, 10s).
	terminationGracePeriod = 30
)

// Annotations the operator keeps on the objects it owns.
const (
	// SpecHashAnnotation holds a hash of the spec the operator last wrote, so that an object
	// is updated only when the desired spec changes.
	SpecHashAnnotation = "sts.tableserver.dev/spec-hash"
	// legacyAuthTokenHashAnnotation was on the pod templates of releases whose servers read
	// their token only at startup, and so were restarted for a new one.
	legacyAuthTokenHashAnnotation = "sts.tableserver.dev/auth-token-hash"
	// ManagedAnnotationsAnnotation holds the keys of the annotations the operator set on an
	// object from the resource's spec (comma-separated), so that a key removed from the spec
	// is removed from the object while annotations that others set stay.
	ManagedAnnotationsAnnotation = "sts.tableserver.dev/managed-annotations"
)

// Labels on every object the operator owns (Kubernetes' recommended app.kubernetes.io set).
// ManagedByLabel also limits what the manager caches.
const (
	nameLabel      = "app.kubernetes.io/name"
	instanceLabel  = "app.kubernetes.io/instance"
	componentLabel = "app.kubernetes.io/component"
	partOfLabel    = "app.kubernetes.io/part-of"
	versionLabel   = "app.kubernetes.io/version"
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "sts-operator"
)

// Endpoint is the URL at which clients in the cluster reach a resource's table server.
func Endpoint(tableServer *stsv1alpha1.SimpleTableServer) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", tableServer.Name, tableServer.Namespace, ServerPort)
}

// claimName is the name of the claim the operator creates for spec.storage.size.
func claimName(tableServer *stsv1alpha1.SimpleTableServer) string { return tableServer.Name + "-data" }

// SelectorLabels select a resource's table-server pods: the Deployment's selector, the
// Service's, the budget's and the NetworkPolicy's.
func SelectorLabels(tableServer *stsv1alpha1.SimpleTableServer) map[string]string {
	return map[string]string{nameLabel: "simpletableserver", instanceLabel: tableServer.Name}
}

// ownedLabels are the labels whose values the operator has always set: the selector and
// managed-by.
func ownedLabels(tableServer *stsv1alpha1.SimpleTableServer) map[string]string {
	l := SelectorLabels(tableServer)
	l[ManagedByLabel] = ManagedByValue
	return l
}

// descriptiveLabels complete the recommended set; they select nothing. version is the tag of the
// table server's image, what the pods run: the operator's own version would change on every
// operator upgrade, and the image is pinned until the resource asks for another.
func descriptiveLabels(image string) map[string]string {
	return map[string]string{componentLabel: "table-server", partOfLabel: ManagedByValue, versionLabel: imageVersion(image)}
}

// ObjectLabels are the labels of every object built for tableServer's table server running image.
func ObjectLabels(tableServer *stsv1alpha1.SimpleTableServer, image string) map[string]string {
	return Merged(ownedLabels(tableServer), descriptiveLabels(image))
}

// imageVersion is the version an image reference names, as a label value: its tag; the first 12
// digits of its digest when it has no tag; "latest" when it names neither, as a pull would.
func imageVersion(image string) string {
	ref, digest, pinned := strings.Cut(image, "@")
	version := "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		version = ref[i+1:]
	} else if pinned {
		_, hex, _ := strings.Cut(digest, ":")
		version = hex[:min(len(hex), 12)]
	}
	// A tag may be 128 characters, a label value 63, ending with a letter or digit.
	return strings.TrimRight(version[:min(len(version), validation.LabelValueMaxLength)], "-_.")
}

func objectMeta(tableServer *stsv1alpha1.SimpleTableServer, name, image string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       tableServer.Namespace,
		Labels:          ObjectLabels(tableServer, image),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(tableServer, stsv1alpha1.GroupVersion.WithKind("SimpleTableServer"))},
	}
}

// Shared says whether tableServer's table servers keep their lists in Redis, which every replica
// shares and which outlives the pods.
func Shared(tableServer *stsv1alpha1.SimpleTableServer) bool {
	return tableServer.Spec.Backend.Type == stsv1alpha1.BackendRedis
}

// Replicas is the number of table-server pods: spec.replicas with a shared backend, one
// otherwise (the API server refuses more).
func Replicas(tableServer *stsv1alpha1.SimpleTableServer) int32 {
	if !Shared(tableServer) || tableServer.Spec.Replicas < 1 {
		return 1
	}
	return tableServer.Spec.Replicas
}

// PodDisruptionBudget returns the budget that lets a node drain evict at most one of several
// table-server pods at a time, or nil when there is one pod (a budget would then only block
// drains, or allow what it allows anyway).
func PodDisruptionBudget(tableServer *stsv1alpha1.SimpleTableServer, image string) *policyv1.PodDisruptionBudget {
	if Replicas(tableServer) == 1 {
		return nil
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(tableServer, tableServer.Name, image),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: SelectorLabels(tableServer)},
		},
	}
	setSpecHash(&pdb.ObjectMeta, pdb.Spec)
	return pdb
}

// NetworkPolicy returns the policy that lets only spec.networkPolicy.from, and the operator's
// namespace (operatorNamespace, "" for none), reach the table servers' port, or nil when the
// resource asks for none.
func NetworkPolicy(tableServer *stsv1alpha1.SimpleTableServer, image, operatorNamespace string) *networkingv1.NetworkPolicy {
	np := tableServer.Spec.NetworkPolicy
	if np == nil {
		return nil
	}
	from := slices.Clone(np.From)
	if operatorNamespace != "" {
		from = append(from, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace},
		}})
	}
	port := intstr.FromString(serverPortName)
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: objectMeta(tableServer, tableServer.Name, image),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: SelectorLabels(tableServer)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			// No rule lets nothing in: an empty from would let everything in.
			Ingress: []networkingv1.NetworkPolicyIngressRule{},
		},
	}
	if len(from) > 0 {
		policy.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{
			From:  from,
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: &port}},
		}}
	}
	setSpecHash(&policy.ObjectMeta, policy.Spec)
	return policy
}

// Service returns the Service in front of the table server, port "http" 9191, with
// spec.service.annotations (their keys recorded, so that one removed from the spec is removed
// from the Service). A ServiceMonitor selecting app.kubernetes.io/name=simpletableserver finds
// every table server's metrics on port "http", path /metrics.
func Service(tableServer *stsv1alpha1.SimpleTableServer, image string) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: objectMeta(tableServer, tableServer.Name, image),
		Spec: corev1.ServiceSpec{
			Type:     tableServer.Spec.Service.Type,
			Selector: SelectorLabels(tableServer),
			Ports: []corev1.ServicePort{{
				Name: serverPortName, Port: ServerPort, TargetPort: intstr.FromString(serverPortName), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	if user := tableServer.Spec.Service.Annotations; len(user) > 0 {
		s.Annotations = Merged(user, map[string]string{
			ManagedAnnotationsAnnotation: strings.Join(slices.Sorted(maps.Keys(user)), ","),
		})
	}
	setSpecHash(&s.ObjectMeta, s.Spec)
	return s
}

// PersistentVolumeClaim returns the claim for spec.storage.size, or nil when the resource asks
// for none (no storage, or an existing claim).
func PersistentVolumeClaim(tableServer *stsv1alpha1.SimpleTableServer, image string) *corev1.PersistentVolumeClaim {
	st := tableServer.Spec.Storage
	if st == nil || st.Size == nil {
		return nil
	}
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: objectMeta(tableServer, claimName(tableServer), image),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: st.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *st.Size}},
		},
	}
}

// setSpecHash records in meta's annotations a hash of spec and of the annotations the builder
// set, everything the operator decides about the object. The map is copied: it may be the
// resource's own.
func setSpecHash(meta *metav1.ObjectMeta, spec any) {
	b, err := json.Marshal(struct {
		Annotations map[string]string
		Spec        any
	}{meta.Annotations, spec})
	if err != nil {
		panic(fmt.Sprintf("marshal a built-in spec: %v", err)) // cannot happen for API types
	}
	annotations := map[string]string{}
	for k, v := range meta.Annotations {
		annotations[k] = v
	}
	annotations[SpecHashAnnotation] = Hash(b)
	meta.Annotations = annotations
}

// HashLength is the length of the hashes the operator records: the first hex digits of a SHA-256,
// the digest the table server reports whole for what it loaded.
const HashLength = 16

// Hash is the form of every hash the operator records: of a spec (SpecHashAnnotation), of a
// dataset's content.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:HashLength]
}

func shortHash(s string) string { return Hash([]byte(s))[:10] }

// Merged returns a new map of base's entries with over's set over them: base may be the
// resource's own map, which nothing here or in the controller writes into.
func Merged(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
