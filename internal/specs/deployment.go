package specs

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// scrapeAnnotations tell a Prometheus that discovers pods by annotation where the table
// server's metrics are. spec.podAnnotations can override them (prometheus.io/scrape: "false").
var scrapeAnnotations = map[string]string{
	"prometheus.io/scrape": "true",
	"prometheus.io/port":   strconv.Itoa(ServerPort),
	"prometheus.io/path":   "/metrics",
}

// Paths inside the table server container.
const (
	serverBinary = "/sts"
	dataDir      = "/data"
	// stateDir holds the server's journal and snapshots, on the storage volume.
	stateDir         = dataDir + "/state"
	datasetMountRoot = "/var/run/sts/datasets"
	claimMountRoot   = "/var/run/sts/claims"
	authTokenDir     = "/var/run/sts/auth"
	authTokenFile    = "token"
	// The Redis credentials and CA, each mounted from its Secret.
	redisCredentialsDir = "/var/run/sts/redis"
	redisPasswordFile   = "password"
	redisUsernameFile   = "username"
	redisCADir          = "/var/run/sts/redis-ca"
	redisCAFile         = "ca.crt"
	// defaultPasswordKey is the key of credentialsSecret that holds the password by default.
	defaultPasswordKey = "password"
	// nonRootID is the user and group the server runs as (distroless "nonroot").
	nonRootID = 65532
)

// Deployment returns the table servers' Deployment: hardened pods that mount every source
// read-only and load each dataset at startup. With the memory backend, one replica replaced
// with Recreate, so that two pods never hold a resource's lists at once; with Redis,
// spec.replicas pods sharing the lists, spread over nodes and zones, rolled one at a time
// without ever leaving none ready. image runs the server (see ServerImage). Secrets (the auth
// token, the Redis credentials) are mounted, not written into the pod: the server reads a
// rotated token in place. tableServer carries the operator's defaults (its default Redis where the
// resource names none, and Defaults.Apply's fields); defaults' security contexts, when set,
// replace the hardened ones (nil defaults: none).
func Deployment(tableServer *stsv1alpha1.SimpleTableServer, image string, defaults *Defaults) *appsv1.Deployment {
	volumes, mounts, loadArgs := datasetVolumes(tableServer)
	podSecurity, containerSecurity := defaults.podSecurity()
	podLabels := Merged(tableServer.Spec.PodLabels, ownedLabels(tableServer))
	podAnnotations := Merged(scrapeAnnotations, tableServer.Spec.PodAnnotations)
	if at, ok := tableServer.Annotations[stsv1alpha1.AnnotationRestartedAt]; ok {
		podAnnotations[stsv1alpha1.AnnotationRestartedAt] = at
	}
	d := &appsv1.Deployment{
		ObjectMeta: objectMeta(tableServer, tableServer.Name, image),
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To(Replicas(tableServer)),
			Selector:             &metav1.LabelSelector{MatchLabels: SelectorLabels(tableServer)},
			Strategy:             strategy(tableServer),
			RevisionHistoryLimit: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					// The server never calls the Kubernetes API.
					AutomountServiceAccountToken:  ptr.To(false),
					EnableServiceLinks:            ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](terminationGracePeriod),
					SecurityContext:               podSecurity,
					Containers: []corev1.Container{{
						Name:            ContainerName,
						Image:           image,
						ImagePullPolicy: tableServer.Spec.ImagePullPolicy,
						Command:         []string{serverBinary},
						Args:            append(serverArgs(tableServer), loadArgs...),
						Ports:           []corev1.ContainerPort{{Name: serverPortName, ContainerPort: ServerPort, Protocol: corev1.ProtocolTCP}},
						Lifecycle:       lifecycle(tableServer),
						ReadinessProbe:  httpProbe("/readyz", 5),
						LivenessProbe:   httpProbe("/healthz", 10),
						Resources:       tableServer.Spec.Resources,
						VolumeMounts:    mounts,
						SecurityContext: containerSecurity,
					}},
					Volumes:                   volumes,
					ImagePullSecrets:          tableServer.Spec.ImagePullSecrets,
					NodeSelector:              tableServer.Spec.NodeSelector,
					Tolerations:               tableServer.Spec.Tolerations,
					Affinity:                  tableServer.Spec.Affinity,
					PriorityClassName:         tableServer.Spec.PriorityClassName,
					TopologySpreadConstraints: topologySpread(tableServer),
				},
			},
		},
	}
	setSpecHash(&d.ObjectMeta, d.Spec)
	// The descriptive labels join the pod template after the hash: adding them to running
	// servers would restart every one on the operator's upgrade (a memory server loses its
	// lists), so their pods get them at their next rollout. The resource's podLabels may set
	// them; the selector and managed-by are the operator's.
	d.Spec.Template.Labels = Merged(descriptiveLabels(image), podLabels)
	return d
}

// strategy replaces a memory server's pod only once the old one is gone (Recreate: two servers
// would each hold their own lists), and Redis-backed pods one at a time, a new one ready before
// an old one stops, so that the Service always has a ready pod.
func strategy(tableServer *stsv1alpha1.SimpleTableServer) appsv1.DeploymentStrategy {
	if !Shared(tableServer) {
		return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	return appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			MaxSurge:       ptr.To(intstr.FromInt32(1)),
		},
	}
}

// topologySpread is spec.topologySpreadConstraints, or by default, for several replicas, a spread
// over nodes and zones that the scheduler follows where it can: a single-node cluster still
// runs them all. pod-template-hash keeps a rollout's new pods from counting the old ones.
func topologySpread(tableServer *stsv1alpha1.SimpleTableServer) []corev1.TopologySpreadConstraint {
	if len(tableServer.Spec.TopologySpreadConstraints) > 0 || Replicas(tableServer) == 1 {
		return tableServer.Spec.TopologySpreadConstraints
	}
	var spread []corev1.TopologySpreadConstraint
	for _, key := range []string{corev1.LabelHostname, corev1.LabelTopologyZone} {
		spread = append(spread, corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       key,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: SelectorLabels(tableServer)},
			MatchLabelKeys:    []string{appsv1.DefaultDeploymentUniqueLabelKey},
		})
	}
	return spread
}

// preStopSleep is how long a stopping Redis-backed pod keeps serving before it is told to stop:
// long enough for the endpoint controller and kube-proxy to take it out of the Service, so that
// no client meets its closed port (a rollout showed "connection refused" without it).
const preStopSleep = 5

// lifecycle delays the stop of a pod that others share the load with (preStopSleep); a memory
// server's one pod stops at once, its replacement waiting for it.
func lifecycle(tableServer *stsv1alpha1.SimpleTableServer) *corev1.Lifecycle {
	if !Shared(tableServer) {
		return nil
	}
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: preStopSleep}}}
}

// ServerImage decides the image of tableServer's table server, given the Deployment that runs it now
// (nil before there is one): spec.image when set; otherwise the image the Deployment already
// runs, so that an operator upgrade with a new default image restarts no server; the default
// for a new server, and when the user asks for a restart with a new value of the
// sts.tableserver.dev/restartedAt annotation. A pod template of a release that restarted servers
// for a new auth token (legacyAuthTokenHashAnnotation) is rolled once anyway: it gets the
// default image too, whose server takes a rotated token in place; the old one never would.
func ServerImage(tableServer *stsv1alpha1.SimpleTableServer, defaultImage string, running *appsv1.Deployment) string {
	if tableServer.Spec.Image != "" {
		return tableServer.Spec.Image
	}
	if running == nil || restartRequested(tableServer, running) {
		return defaultImage
	}
	if _, legacy := running.Spec.Template.Annotations[legacyAuthTokenHashAnnotation]; legacy {
		if _, own := tableServer.Spec.PodAnnotations[legacyAuthTokenHashAnnotation]; !own {
			return defaultImage
		}
	}
	if image := RunningImage(running); image != "" {
		return image
	}
	return defaultImage
}

// restartRequested is true when the resource's restartedAt annotation differs from the one
// the running pod template was built with.
func restartRequested(tableServer *stsv1alpha1.SimpleTableServer, running *appsv1.Deployment) bool {
	const key = stsv1alpha1.AnnotationRestartedAt
	return tableServer.Annotations[key] != running.Spec.Template.Annotations[key]
}

// ServerContainer is d's table-server container, nil when it has none.
func ServerContainer(d *appsv1.Deployment) *corev1.Container {
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == ContainerName {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// RunningImage is the image of the Deployment's table server container ("" when it has none).
func RunningImage(d *appsv1.Deployment) string {
	if c := ServerContainer(d); c != nil {
		return c.Image
	}
	return ""
}

// durable says whether the server journals its lists (spec.server.durability): by default
// when its storage is a claim, which outlives the pod. The Redis backend has no journal.
func durable(tableServer *stsv1alpha1.SimpleTableServer) bool {
	if Shared(tableServer) {
		return false
	}
	switch tableServer.Spec.Server.Durability {
	case stsv1alpha1.DurabilityEnabled:
		return true
	case stsv1alpha1.DurabilityDisabled:
		return false
	default:
		return tableServer.Spec.Storage != nil
	}
}

// serverArgs are the table server's flags from spec.server; every boolean is explicit because
// the server's own defaults are the standalone original's (STOP allowed).
func serverArgs(tableServer *stsv1alpha1.SimpleTableServer) []string {
	opts := tableServer.Spec.Server
	args := []string{
		"--bind=0.0.0.0",
		"--port=" + strconv.Itoa(ServerPort),
		"--dataset-dir=" + dataDir,
		"--add-timestamp=" + strconv.FormatBool(ptr.Deref(opts.AddTimestamp, true)),
		"--allow-stop=" + strconv.FormatBool(ptr.Deref(opts.AllowStop, false)),
	}
	for _, c := range []struct{ flag, value string }{
		{"--charset-read", opts.Charsets.Read},
		{"--charset-write", opts.Charsets.Write},
		{"--charset-response", opts.Charsets.Response},
	} {
		if c.value != "" {
			args = append(args, c.flag+"="+c.value)
		}
	}
	if opts.AuthTokenSecret != nil {
		// /metrics names every list and its traffic: behind the same token as the lines.
		args = append(args, "--auth-token-file="+path.Join(authTokenDir, authTokenFile), "--metrics-auth")
	}
	if durable(tableServer) {
		args = append(args, durabilityArgs(opts)...)
	}
	if Shared(tableServer) {
		args = append(args, redisArgs(tableServer)...)
	}
	args = append(args, limitArgs(opts.Limits)...)
	if budget, derived := memoryBudget(tableServer); derived {
		args = append(args, "--max-total-bytes="+strconv.FormatInt(budget, 10))
	}
	args = append(args, leaseArgs(tableServer)...)
	return append(args, uiArgs(opts.UI)...)
}

// serverMemoryBase is what the table server holds beyond its lists' budget (cmd/sts memoryBase):
// its resident memory stays within twice the budget and this.
const serverMemoryBase = 64 << 20

// memoryBudget derives --max-total-bytes from the pod's memory limit when the resource sets no
// budget of its own and keeps its lists in memory: the largest budget whose bound (twice the
// budget and serverMemoryBase) fits the limit, so that clients filling the lists meet a 507
// rather than the OOM killer; a quarter of a limit too small for that.
func memoryBudget(tableServer *stsv1alpha1.SimpleTableServer) (int64, bool) {
	limit, set := tableServer.Spec.Resources.Limits[corev1.ResourceMemory]
	if !set || tableServer.Spec.Server.Limits.MaxTotalBytes != nil || Shared(tableServer) {
		return 0, false
	}
	bytes := limit.Value()
	if budget := (bytes - serverMemoryBase) / 2; budget >= bytes/4 {
		return budget, true
	}
	return max(bytes/4, 1<<10), true
}

// ListsOutlivePods says whether a new pod finds the lists its predecessor left, and so keeps
// them instead of loading its datasets again: from a journal, or from Redis.
func ListsOutlivePods(tableServer *stsv1alpha1.SimpleTableServer) bool {
	return durable(tableServer) || Shared(tableServer)
}

// redisArgs point the server at spec.backend.redis (the operator's default Redis where the
// resource names none).
func redisArgs(tableServer *stsv1alpha1.SimpleTableServer) []string {
	r := tableServer.Spec.Backend.Redis
	if r == nil {
		r = &stsv1alpha1.RedisBackend{}
	}
	scheme, host := "redis", r.Address
	if r.TLS != nil && r.TLS.Enabled {
		scheme = "rediss"
	}
	if s := r.Sentinel; s != nil {
		host = s.Addresses[0] // not dialled: the sentinels name the master
	}
	args := []string{
		fmt.Sprintf("--redis-url=%s://%s/%d", scheme, host, ptr.Deref(r.Database, 0)),
		"--redis-key-prefix=" + redisKeyPrefix(tableServer),
	}
	if s := r.Sentinel; s != nil {
		args = append(args, "--redis-sentinel-master="+s.MasterName, "--redis-sentinel-addrs="+strings.Join(s.Addresses, ","))
	}
	if ptr.Deref(r.Cluster, false) {
		args = append(args, "--redis-cluster")
	}
	if c := r.CredentialsSecret; c != nil {
		args = append(args, "--redis-password-file="+path.Join(redisCredentialsDir, redisPasswordFile))
		if c.UsernameKey != "" {
			args = append(args, "--redis-username-file="+path.Join(redisCredentialsDir, redisUsernameFile))
		}
	}
	if r.TLS != nil && r.TLS.CASecret != nil {
		args = append(args, "--redis-ca-file="+path.Join(redisCADir, redisCAFile))
	}
	if r.MinReplicas > 0 {
		args = append(args, "--redis-min-replicas="+strconv.Itoa(int(r.MinReplicas)))
		if r.MinReplicasTimeout != nil {
			args = append(args, "--redis-min-replicas-timeout="+r.MinReplicasTimeout.Duration.String())
		}
	}
	return args
}

// redisKeyPrefix is spec.backend.redis.keyPrefix, by default one of this resource's own, so that
// two resources sharing a Redis never share lists by accident.
func redisKeyPrefix(tableServer *stsv1alpha1.SimpleTableServer) string {
	if r := tableServer.Spec.Backend.Redis; r != nil && r.KeyPrefix != "" {
		return r.KeyPrefix
	}
	return "sts:" + tableServer.Namespace + "/" + tableServer.Name + ":"
}

// PasswordKey is the credentials Secret's key holding the password.
func PasswordKey(c *stsv1alpha1.RedisCredentials) string {
	if c.PasswordKey != "" {
		return c.PasswordKey
	}
	return defaultPasswordKey
}

// durabilityArgs turn the journal on. --state-dir-wait makes a new pod wait for the state
// directory's lock instead of failing: a replacement pod can briefly overlap a terminating one
// on the same claim (Recreate waits for the old pod, but not across a node's partition).
func durabilityArgs(opts stsv1alpha1.ServerOptions) []string {
	policy := opts.FsyncPolicy
	if policy == "" {
		policy = stsv1alpha1.FsyncAlways
	}
	args := []string{"--state-dir=" + stateDir, "--state-dir-wait", "--fsync-policy=" + strings.ToLower(string(policy))}
	if policy == stsv1alpha1.FsyncInterval && opts.FsyncInterval != nil {
		args = append(args, "--fsync-interval="+opts.FsyncInterval.Duration.String())
	}
	return args
}

// limitArgs pass each limit that is set; the server's defaults apply to the others.
func limitArgs(l stsv1alpha1.ServerLimits) []string {
	var args []string
	if l.MaxLinesPerList != nil {
		args = append(args, "--max-lines-per-list="+strconv.FormatInt(*l.MaxLinesPerList, 10))
	}
	if l.MaxTotalBytes != nil {
		args = append(args, "--max-total-bytes="+strconv.FormatInt(l.MaxTotalBytes.Value(), 10))
	}
	if l.MaxLineBytes != nil {
		args = append(args, "--max-line-bytes="+strconv.FormatInt(int64(*l.MaxLineBytes), 10))
	}
	if l.MaxWait != nil {
		args = append(args, "--max-wait="+l.MaxWait.Duration.String())
	}
	if l.MaxLists != nil {
		args = append(args, "--max-lists="+strconv.FormatInt(*l.MaxLists, 10))
	}
	if l.MaxNameBytes != nil {
		args = append(args, "--max-name-bytes="+strconv.FormatInt(int64(*l.MaxNameBytes), 10))
	}
	if l.MinFreeBytes != nil {
		args = append(args, "--min-free-bytes="+strconv.FormatInt(l.MinFreeBytes.Value(), 10))
	}
	if l.MaxBodyBytes != nil {
		args = append(args, "--max-body-bytes="+strconv.FormatInt(l.MaxBodyBytes.Value(), 10))
	}
	if l.RegexTimeout != nil {
		args = append(args, "--regex-timeout="+l.RegexTimeout.Duration.String())
	}
	return args
}

// uiArgs pass the web page's stream bounds that are set.
func uiArgs(ui stsv1alpha1.UIOptions) []string {
	var args []string
	if ui.MaxStreams != nil {
		args = append(args, "--ui-max-streams="+strconv.Itoa(int(*ui.MaxStreams)))
	}
	if ui.MaxStreamsPerSession != nil {
		args = append(args, "--ui-max-streams-per-session="+strconv.Itoa(int(*ui.MaxStreamsPerSession)))
	}
	if ui.StreamWriteTimeout != nil {
		args = append(args, "--ui-stream-write-timeout="+ui.StreamWriteTimeout.Duration.String())
	}
	return args
}

// leaseArgs pass the lease options that are set, and each dataset's own maxDeliveries.
func leaseArgs(tableServer *stsv1alpha1.SimpleTableServer) []string {
	var args []string
	l := tableServer.Spec.Server.Leases
	if l.MaxLease != nil {
		args = append(args, "--max-lease="+l.MaxLease.Duration.String())
	}
	if l.MaxDeliveries != nil {
		args = append(args, "--max-deliveries="+strconv.Itoa(int(*l.MaxDeliveries)))
	}
	if l.RequestIDWindow != nil {
		args = append(args, "--request-id-window="+l.RequestIDWindow.Duration.String())
	}
	for _, ds := range tableServer.Spec.Datasets {
		if ds.MaxDeliveries != nil {
			args = append(args, fmt.Sprintf("--max-deliveries-list=%s=%d", ds.Name, *ds.MaxDeliveries))
		}
	}
	return args
}

// datasetVolumes returns the pod's volumes and the container's mounts (the writable dataset
// directory, each source read-only, the auth token) and the flags that load every dataset.
func datasetVolumes(tableServer *stsv1alpha1.SimpleTableServer) ([]corev1.Volume, []corev1.VolumeMount, []string) {
	volumes := []corev1.Volume{storageVolume(tableServer)}
	mounts := []corev1.VolumeMount{{Name: volumes[0].Name, MountPath: dataDir}}
	var args []string
	claims := map[string]bool{} // one volume per claim
	for _, ds := range tableServer.Spec.Datasets {
		switch {
		case ds.ConfigMap != nil, ds.Secret != nil:
			name := datasetVolumeName(ds.Name)
			volumes = append(volumes, keyVolume(name, ds))
			mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join(datasetMountRoot, name), ReadOnly: true})
		case ds.PersistentVolumeClaim != nil && !claims[ds.PersistentVolumeClaim.ClaimName]:
			claim := ds.PersistentVolumeClaim.ClaimName
			claims[claim] = true
			name := claimVolumeName(claim)
			volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true},
			}})
			mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Join(claimMountRoot, name), ReadOnly: true})
		}
		if src := ds.PersistentVolumeClaim; src != nil && src.Match != "" {
			args = append(args, "--load-dir="+DatasetPath(ds)+"="+src.Match)
		} else {
			args = append(args, "--load="+ds.Name+"="+DatasetPath(ds))
		}
	}
	secret := func(volume, dir, name string, items ...corev1.KeyToPath) {
		volumes = append(volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: name, Items: items, DefaultMode: ptr.To[int32](0o440),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
	}
	if tok := tableServer.Spec.Server.AuthTokenSecret; tok != nil {
		secret("auth-token", authTokenDir, tok.Name, corev1.KeyToPath{Key: tok.Key, Path: authTokenFile})
	}
	if r := tableServer.Spec.Backend.Redis; Shared(tableServer) && r != nil {
		if c := r.CredentialsSecret; c != nil {
			items := []corev1.KeyToPath{{Key: PasswordKey(c), Path: redisPasswordFile}}
			if c.UsernameKey != "" {
				items = append(items, corev1.KeyToPath{Key: c.UsernameKey, Path: redisUsernameFile})
			}
			secret("redis-credentials", redisCredentialsDir, c.Name, items...)
		}
		if r.TLS != nil && r.TLS.CASecret != nil {
			secret("redis-ca", redisCADir, r.TLS.CASecret.Name, corev1.KeyToPath{Key: r.TLS.CASecret.Key, Path: redisCAFile})
		}
	}
	return volumes, mounts, args
}

func storageVolume(tableServer *stsv1alpha1.SimpleTableServer) corev1.Volume {
	v := corev1.Volume{Name: "data"}
	switch st := tableServer.Spec.Storage; {
	case st == nil:
		v.EmptyDir = &corev1.EmptyDirVolumeSource{}
	case st.ExistingClaim != "":
		v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: st.ExistingClaim}
	default:
		v.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(tableServer)}
	}
	return v
}

// keyVolume projects the one key a ConfigMap or Secret dataset reads, under its own name.
// Volume names are hashes: dataset and claim names may hold characters a volume name cannot.
func datasetVolumeName(dataset string) string { return "ds-" + shortHash(dataset) }
func claimVolumeName(claim string) string     { return "claim-" + shortHash(claim) }

// DatasetPath is where the table server reads a dataset in its pod: the file of a ConfigMap,
// Secret or claim file dataset, or the directory of a claim dataset with a match pattern.
func DatasetPath(ds stsv1alpha1.Dataset) string {
	if src := ds.PersistentVolumeClaim; src != nil {
		return path.Join(claimMountRoot, claimVolumeName(src.ClaimName), src.Path)
	}
	return path.Join(datasetMountRoot, datasetVolumeName(ds.Name), sourceKey(ds))
}

func keyVolume(name string, ds stsv1alpha1.Dataset) corev1.Volume {
	v := corev1.Volume{Name: name}
	if ds.ConfigMap != nil {
		v.ConfigMap = &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ds.ConfigMap.Name},
			Items:                []corev1.KeyToPath{{Key: ds.ConfigMap.Key, Path: ds.ConfigMap.Key}},
		}
	} else {
		v.Secret = &corev1.SecretVolumeSource{
			SecretName:  ds.Secret.Name,
			Items:       []corev1.KeyToPath{{Key: ds.Secret.Key, Path: ds.Secret.Key}},
			DefaultMode: ptr.To[int32](0o440),
		}
	}
	return v
}

func sourceKey(ds stsv1alpha1.Dataset) string {
	if ds.ConfigMap != nil {
		return ds.ConfigMap.Key
	}
	return ds.Secret.Key
}

func httpProbe(path string, periodSeconds int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(serverPortName)}},
		PeriodSeconds:    periodSeconds,
		TimeoutSeconds:   2,
		FailureThreshold: 3,
	}
}
