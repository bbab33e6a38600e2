package specs

import (
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// volumeAt returns the volume mounted at the directory holding p (or at p), and the mount.
func volumeAt(t *testing.T, d *appsv1.Deployment, p string) (corev1.Volume, corev1.VolumeMount) {
	t.Helper()
	pod := d.Spec.Template.Spec
	for _, m := range pod.Containers[0].VolumeMounts {
		if p == m.MountPath || strings.HasPrefix(p, m.MountPath+"/") {
			for _, v := range pod.Volumes {
				if v.Name == m.Name {
					return v, m
				}
			}
			t.Fatalf("mount %q names no volume", m.Name)
		}
	}
	t.Fatalf("no volume is mounted at %q; mounts: %+v", p, pod.Containers[0].VolumeMounts)
	return corev1.Volume{}, corev1.VolumeMount{}
}

func TestDeploymentLoadsEveryDatasetFromAReadOnlySource(t *testing.T) {
	tests := map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		wantFlags   []string // "--load LIST" or "--load-dir PATTERN", in order
		// check inspects the volume and mount behind each flag, in the same order.
		check []func(t *testing.T, v corev1.Volume, file string)
	}{
		"configMap key": {
			tableServer: specstest.New("a", specstest.WithConfigMapDataset("users.csv", "logins", "users")),
			wantFlags:   []string{"--load users.csv"},
			check: []func(*testing.T, corev1.Volume, string){func(t *testing.T, v corev1.Volume, file string) {
				if v.ConfigMap == nil || v.ConfigMap.Name != "logins" || !reflect.DeepEqual(v.ConfigMap.Items, []corev1.KeyToPath{{Key: "users", Path: "users"}}) {
					t.Errorf("volume %+v does not project key users of ConfigMap logins", v)
				}
				if path.Base(file) != "users" {
					t.Errorf("loads %q, not the projected key", file)
				}
			}},
		},
		"secret key": {
			tableServer: specstest.New("a", specstest.WithSecretDataset("cards", "payment", "cards.csv")),
			wantFlags:   []string{"--load cards"},
			check: []func(*testing.T, corev1.Volume, string){func(t *testing.T, v corev1.Volume, file string) {
				if v.Secret == nil || v.Secret.SecretName != "payment" || v.Secret.Items[0].Key != "cards.csv" || path.Base(file) != "cards.csv" {
					t.Errorf("volume %+v / file %q do not read key cards.csv of Secret payment", v, file)
				}
			}},
		},
		"file on a claim": {
			tableServer: specstest.New("a", specstest.WithClaimDataset("big", "datasets", "perf/big.csv", "")),
			wantFlags:   []string{"--load big"},
			check: []func(*testing.T, corev1.Volume, string){func(t *testing.T, v corev1.Volume, file string) {
				if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "datasets" || !v.PersistentVolumeClaim.ReadOnly {
					t.Errorf("volume %+v is not claim datasets, read-only", v)
				}
				if !strings.HasSuffix(file, "/perf/big.csv") {
					t.Errorf("loads %q, want the claim's perf/big.csv", file)
				}
			}},
		},
		"directory on a claim with a pattern": {
			tableServer: specstest.New("a", specstest.WithClaimDataset("csvs", "datasets", "perf", `.*\.csv`)),
			wantFlags:   []string{`--load-dir .*\.csv`},
			check: []func(*testing.T, corev1.Volume, string){func(t *testing.T, v corev1.Volume, dir string) {
				if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "datasets" || !strings.HasSuffix(dir, "/perf") {
					t.Errorf("volume %+v / dir %q are not the claim's perf directory", v, dir)
				}
			}},
		},
		"names that are no volume names, in spec order": {
			tableServer: specstest.New("a",
				specstest.WithConfigMapDataset("Logins 2026.csv", "logins", "users"),
				specstest.WithConfigMapDataset("...", "logins", "admins")),
			wantFlags: []string{"--load Logins 2026.csv", "--load ..."},
			check: []func(*testing.T, corev1.Volume, string){
				func(t *testing.T, v corev1.Volume, file string) {
					if v.ConfigMap.Items[0].Key != "users" {
						t.Errorf("first dataset reads %+v", v.ConfigMap.Items)
					}
				},
				func(t *testing.T, v corev1.Volume, file string) {
					if v.ConfigMap.Items[0].Key != "admins" {
						t.Errorf("second dataset reads %+v", v.ConfigMap.Items)
					}
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := Deployment(tc.tableServer, specstest.Image, nil)
			flags := specstest.LoadFlags(d)
			var got []string
			for _, f := range flags {
				got = append(got, f.Flag+" "+f.List)
			}
			if !reflect.DeepEqual(got, tc.wantFlags) {
				t.Fatalf("load flags = %q, want %q", got, tc.wantFlags)
			}
			for i, f := range flags {
				v, m := volumeAt(t, d, f.Path)
				if !m.ReadOnly {
					t.Errorf("source of %q is mounted writable", f.List)
				}
				tc.check[i](t, v, f.Path)
			}
			if vs := d.Spec.Template.Spec.Volumes; len(vs) != len(uniqueNames(vs)) {
				t.Errorf("duplicate volume names in %+v", vs)
			}
		})
	}
}

func uniqueNames(vs []corev1.Volume) map[string]bool {
	m := map[string]bool{}
	for _, v := range vs {
		m[v.Name] = true
	}
	return m
}

func TestDeploymentMountsAClaimOnceForSeveralDatasets(t *testing.T) {
	d := Deployment(specstest.New("a",
		specstest.WithClaimDataset("one", "datasets", "one.csv", ""),
		specstest.WithClaimDataset("two", "datasets", "two.csv", ""),
		specstest.WithClaimDataset("other", "archive", "x.csv", "")), specstest.Image, nil)
	claims := map[string]int{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if c := v.PersistentVolumeClaim; c != nil {
			claims[c.ClaimName]++
		}
	}
	if want := map[string]int{"datasets": 1, "archive": 1}; !reflect.DeepEqual(claims, want) {
		t.Errorf("claim volumes = %v, want %v", claims, want)
	}
}

func TestDeploymentRunsOneHardenedPodAtATime(t *testing.T) {
	tableServer := specstest.New("logins", specstest.InNamespace("perf"), specstest.WithConfigMapDataset("users", "logins", "users"))
	d := Deployment(tableServer, specstest.Image, nil)

	if d.Name != "logins" || d.Namespace != "perf" {
		t.Errorf("Deployment is %s/%s", d.Namespace, d.Name)
	}
	specstest.AssertOwnedBy(t, d.OwnerReferences, tableServer)
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d strategy %q: want 1 and Recreate", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	pod := d.Spec.Template.Spec
	if !reflect.DeepEqual(d.Spec.Selector.MatchLabels, SelectorLabels(tableServer)) {
		t.Errorf("selector %v", d.Spec.Selector.MatchLabels)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pod labels %v do not match the selector", d.Spec.Template.Labels)
		}
	}
	psc := pod.SecurityContext
	if !*psc.RunAsNonRoot || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || *pod.AutomountServiceAccountToken {
		t.Errorf("pod security: %+v, automount %v", psc, *pod.AutomountServiceAccountToken)
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot ||
		!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container security: %+v", sc)
	}
	if c.Image != specstest.Image || !reflect.DeepEqual(c.Command, []string{"/sts"}) {
		t.Errorf("image %q command %q", c.Image, c.Command)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 9191 {
		t.Errorf("ports %+v", c.Ports)
	}
	for probe, want := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Port.StrVal != "http" {
			t.Errorf("probe %+v, want GET %s on port http", probe, want)
		}
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 15 {
		t.Errorf("terminationGracePeriodSeconds %v: the server needs time to flush its journal", g)
	}
	for k, v := range map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9191", "prometheus.io/path": "/metrics"} {
		if got := d.Spec.Template.Annotations[k]; got != v {
			t.Errorf("pod annotation %s = %q, want %q", k, got, v)
		}
	}
}

func TestPodAnnotationsOverrideTheScrapeAnnotations(t *testing.T) {
	tableServer := specstest.New("a")
	tableServer.Spec.PodAnnotations = map[string]string{"prometheus.io/scrape": "false", "team": "perf"}
	a := Deployment(tableServer, specstest.Image, nil).Spec.Template.Annotations
	if a["prometheus.io/scrape"] != "false" || a["team"] != "perf" || a["prometheus.io/port"] != "9191" {
		t.Errorf("pod annotations %v", a)
	}
	if tableServer.Spec.PodAnnotations["prometheus.io/port"] != "" {
		t.Error("the builder wrote into the resource's podAnnotations map")
	}
}

func TestServerImage(t *testing.T) {
	const def = "sts-operator:2.0"
	running := func(image, restartedAt string) *appsv1.Deployment {
		d := Deployment(specstest.New("a"), image, nil)
		if restartedAt != "" {
			d.Spec.Template.Annotations[stsv1alpha1.AnnotationRestartedAt] = restartedAt
		}
		return d
	}
	legacy := running("sts-operator:1.0", "")
	legacy.Spec.Template.Annotations[legacyAuthTokenHashAnnotation] = "0123456789abcdef"
	ownLegacy := specstest.New("a")
	ownLegacy.Spec.PodAnnotations = map[string]string{legacyAuthTokenHashAnnotation: "0123456789abcdef"}
	restarted := func(at string) specstest.Option {
		return func(s *stsv1alpha1.SimpleTableServer) {
			s.Annotations = map[string]string{stsv1alpha1.AnnotationRestartedAt: at}
		}
	}
	tests := map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		running     *appsv1.Deployment
		want        string
	}{
		"new server: the default":                {specstest.New("a"), nil, def},
		"new server with spec.image":             {specstest.New("a", specstest.WithImage("mine:1")), nil, "mine:1"},
		"after an upgrade: the running image":    {specstest.New("a"), running("sts-operator:1.0", ""), "sts-operator:1.0"},
		"spec.image set: it":                     {specstest.New("a", specstest.WithImage("mine:2")), running("mine:1", ""), "mine:2"},
		"spec.image cleared: the running image":  {specstest.New("a"), running("mine:1", ""), "mine:1"},
		"restart asked: the default":             {specstest.New("a", restarted("2026-11-29T10:00:00Z")), running("sts-operator:1.0", ""), def},
		"restart done: the image it got":         {specstest.New("a", restarted("t1")), running("sts-operator:1.5", "t1"), "sts-operator:1.5"},
		"another restart: the default again":     {specstest.New("a", restarted("t2")), running("sts-operator:1.5", "t1"), def},
		"restart with spec.image: spec.image":    {specstest.New("a", specstest.WithImage("mine:1"), restarted("t1")), running("mine:1", ""), "mine:1"},
		"annotation removed: a restart request":  {specstest.New("a"), running("sts-operator:1.0", "t1"), def},
		"no table server container: the default": {specstest.New("a"), &appsv1.Deployment{}, def},
		// Its server reads the token only at startup: the one roll of the upgrade moves it on.
		"a release restarting for new tokens: the default":    {specstest.New("a", specstest.WithAuthToken("t", "t")), legacy, def},
		"the same with spec.image: spec.image":                {specstest.New("a", specstest.WithAuthToken("t", "t"), specstest.WithImage("mine:1")), legacy, "mine:1"},
		"the annotation is the user's own: the running image": {ownLegacy, legacy, "sts-operator:1.0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ServerImage(tc.tableServer, def, tc.running); got != tc.want {
				t.Errorf("image %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRestartedAtRestartsThePod(t *testing.T) {
	tableServer := specstest.New("a")
	before := Deployment(tableServer, specstest.Image, nil)
	tableServer.Annotations = map[string]string{stsv1alpha1.AnnotationRestartedAt: "2026-11-29T10:00:00Z"}
	after := Deployment(tableServer, specstest.Image, nil)
	if after.Spec.Template.Annotations[stsv1alpha1.AnnotationRestartedAt] != "2026-11-29T10:00:00Z" ||
		after.Annotations[SpecHashAnnotation] == before.Annotations[SpecHashAnnotation] {
		t.Errorf("the restart request does not reach the pod template: %v", after.Spec.Template.Annotations)
	}
}

// withMemoryLimit sets the table server's memory limit.
func withMemoryLimit(q string) specstest.Option {
	return func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	}
}

func TestDeploymentServerFlags(t *testing.T) {
	base := []string{"--bind=0.0.0.0", "--port=9191", "--dataset-dir=/data", "--add-timestamp=true", "--allow-stop=false"}
	journal := []string{"--state-dir=/data/state", "--state-dir-wait", "--fsync-policy=always"}
	withStorage := func(s *stsv1alpha1.SimpleTableServer) { specstest.WithStorageSize("1Gi", nil)(s) }
	tests := map[string]struct {
		server stsv1alpha1.ServerOptions
		opts   []specstest.Option
		want   []string
	}{
		"defaults": {want: base},
		"every option": {
			server: stsv1alpha1.ServerOptions{
				AddTimestamp: ptr.To(false), AllowStop: ptr.To(true),
				Charsets:        stsv1alpha1.Charsets{Read: "ISO-8859-1", Write: "UTF-8", Response: "windows-1252"},
				AuthTokenSecret: &stsv1alpha1.KeySelector{Name: "token", Key: "t"},
			},
			want: []string{"--bind=0.0.0.0", "--port=9191", "--dataset-dir=/data", "--add-timestamp=false", "--allow-stop=true",
				"--charset-read=ISO-8859-1", "--charset-write=UTF-8", "--charset-response=windows-1252",
				"--auth-token-file=/var/run/sts/auth/token", "--metrics-auth"},
		},
		"storage: the journal on the claim": {opts: []specstest.Option{withStorage}, want: append(slices.Clone(base), journal...)},
		"existing claim: the journal on it": {opts: []specstest.Option{specstest.WithExistingClaim("mine")}, want: append(slices.Clone(base), journal...)},
		"storage, durability disabled": {
			server: stsv1alpha1.ServerOptions{Durability: stsv1alpha1.DurabilityDisabled}, opts: []specstest.Option{withStorage}, want: base,
		},
		"emptyDir, durability enabled": {
			server: stsv1alpha1.ServerOptions{Durability: stsv1alpha1.DurabilityEnabled}, want: append(slices.Clone(base), journal...),
		},
		"emptyDir, durability auto: off": {server: stsv1alpha1.ServerOptions{Durability: stsv1alpha1.DurabilityAuto}, want: base},
		"fsync every interval": {
			server: stsv1alpha1.ServerOptions{FsyncPolicy: stsv1alpha1.FsyncInterval, FsyncInterval: &metav1.Duration{Duration: 100 * time.Millisecond}},
			opts:   []specstest.Option{withStorage},
			want:   append(slices.Clone(base), "--state-dir=/data/state", "--state-dir-wait", "--fsync-policy=interval", "--fsync-interval=100ms"),
		},
		"fsync every interval, the server's interval": {
			server: stsv1alpha1.ServerOptions{FsyncPolicy: stsv1alpha1.FsyncInterval},
			opts:   []specstest.Option{withStorage},
			want:   append(slices.Clone(base), "--state-dir=/data/state", "--state-dir-wait", "--fsync-policy=interval"),
		},
		"fsync policy without durability: no journal flags": {
			server: stsv1alpha1.ServerOptions{FsyncPolicy: stsv1alpha1.FsyncInterval, FsyncInterval: &metav1.Duration{Duration: time.Second}},
			want:   base,
		},
		"every limit": {
			server: stsv1alpha1.ServerOptions{Limits: stsv1alpha1.ServerLimits{
				MaxLinesPerList: ptr.To[int64](1000000), MaxTotalBytes: ptr.To(resource.MustParse("512Mi")),
				MaxLineBytes: ptr.To[int32](4096), MaxWait: &metav1.Duration{Duration: 30 * time.Second},
				MaxLists: ptr.To[int64](500), MaxNameBytes: ptr.To[int32](256), MinFreeBytes: ptr.To(resource.MustParse("16Mi")),
				MaxBodyBytes: ptr.To(resource.MustParse("4Mi")), RegexTimeout: &metav1.Duration{Duration: 250 * time.Millisecond},
			}},
			want: append(slices.Clone(base), "--max-lines-per-list=1000000", "--max-total-bytes=536870912", "--max-line-bytes=4096", "--max-wait=30s",
				"--max-lists=500", "--max-name-bytes=256", "--min-free-bytes=16777216", "--max-body-bytes=4194304", "--regex-timeout=250ms"),
		},
		"the web page's stream bounds": {
			server: stsv1alpha1.ServerOptions{UI: stsv1alpha1.UIOptions{
				MaxStreams: ptr.To[int32](16), MaxStreamsPerSession: ptr.To[int32](2), StreamWriteTimeout: &metav1.Duration{Duration: 5 * time.Second},
			}},
			want: append(slices.Clone(base), "--ui-max-streams=16", "--ui-max-streams-per-session=2", "--ui-stream-write-timeout=5s"),
		},
		"one limit": {
			server: stsv1alpha1.ServerOptions{Limits: stsv1alpha1.ServerLimits{MaxTotalBytes: ptr.To(resource.MustParse("1G"))}},
			want:   append(slices.Clone(base), "--max-total-bytes=1000000000"),
		},
		// The budget from the memory limit: RSS ≤ 2 × budget + 64Mi must fit it.
		"a memory limit, no budget": {
			opts: []specstest.Option{withMemoryLimit("512Mi")},
			want: append(slices.Clone(base), "--max-total-bytes=234881024"), // (512Mi - 64Mi) / 2
		},
		"a small memory limit": {
			opts: []specstest.Option{withMemoryLimit("64Mi")},
			want: append(slices.Clone(base), "--max-total-bytes=16777216"), // a quarter
		},
		"a memory limit and a budget: the budget": {
			server: stsv1alpha1.ServerOptions{Limits: stsv1alpha1.ServerLimits{MaxTotalBytes: ptr.To(resource.MustParse("1G"))}},
			opts:   []specstest.Option{withMemoryLimit("512Mi")},
			want:   append(slices.Clone(base), "--max-total-bytes=1000000000"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := Deployment(specstest.New("a", append([]specstest.Option{specstest.WithServer(tc.server)}, tc.opts...)...), specstest.Image, nil)
			if got := d.Spec.Template.Spec.Containers[0].Args; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("args\n got %q\nwant %q", got, tc.want)
			}
			if tc.server.AuthTokenSecret != nil {
				v, m := volumeAt(t, d, "/var/run/sts/auth/token")
				if v.Secret == nil || v.Secret.SecretName != "token" || v.Secret.Items[0].Key != "t" || !m.ReadOnly {
					t.Errorf("token volume %+v mount %+v", v, m)
				}
			}
		})
	}
}

// TestTheJournalIsOnTheStorageVolume: --state-dir must lie on the writable volume that
// spec.storage names, or a new pod would start from an empty journal.
func TestTheJournalIsOnTheStorageVolume(t *testing.T) {
	d := Deployment(specstest.New("a", specstest.WithStorageSize("1Gi", nil)), specstest.Image, nil)
	var dir string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--state-dir="); ok {
			dir = v
		}
	}
	v, m := volumeAt(t, d, dir)
	if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "a-data" || m.ReadOnly {
		t.Errorf("--state-dir=%s is on volume %+v (read-only %v), want the writable claim a-data", dir, v, m.ReadOnly)
	}
}

func TestDeploymentStorage(t *testing.T) {
	tests := map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		want        corev1.VolumeSource
	}{
		"none: emptyDir": {specstest.New("a"), corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		"existing claim": {specstest.New("a", specstest.WithExistingClaim("saved")),
			corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "saved"}}},
		"size: the operator's claim": {specstest.New("a", specstest.WithStorageSize("1Gi", nil)),
			corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "a-data"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := Deployment(tc.tableServer, specstest.Image, nil)
			v, m := volumeAt(t, d, "/data")
			if !reflect.DeepEqual(v.VolumeSource, tc.want) || m.ReadOnly {
				t.Errorf("dataset dir volume %+v (read-only %v), want %+v writable", v.VolumeSource, m.ReadOnly, tc.want)
			}
		})
	}
}

func TestPodLabelsCannotTakeTheSelector(t *testing.T) {
	d := Deployment(specstest.New("a", specstest.WithPodLabels(map[string]string{"team": "perf", instanceLabel: "other"})), specstest.Image, nil)
	if l := d.Spec.Template.Labels; l["team"] != "perf" || l[instanceLabel] != "a" {
		t.Errorf("pod labels %v", l)
	}
}

func TestSpecHashFollowsTheDesiredSpecOnly(t *testing.T) {
	base := specstest.New("a", specstest.WithConfigMapDataset("users", "logins", "users"))
	hash := func(tableServer *stsv1alpha1.SimpleTableServer) string {
		return Deployment(tableServer, ServerImage(tableServer, specstest.Image, nil), nil).Annotations[SpecHashAnnotation]
	}
	same := base.DeepCopy()
	same.Status.TotalLines = 42
	same.Annotations = map[string]string{"note": "x"}
	if hash(base) == "" || hash(base) != hash(same) {
		t.Errorf("hash changed with status or metadata: %q vs %q", hash(base), hash(same))
	}
	for name, change := range map[string]specstest.Option{
		"dataset": specstest.WithConfigMapDataset("more", "logins", "more"),
		"image":   specstest.WithImage("other:1"),
		"labels":  specstest.WithPodLabels(map[string]string{"a": "b"}),
		"limits":  specstest.WithServer(stsv1alpha1.ServerOptions{Limits: stsv1alpha1.ServerLimits{MaxLineBytes: ptr.To[int32](10)}}),
	} {
		changed := base.DeepCopy()
		change(changed)
		if hash(changed) == hash(base) {
			t.Errorf("a %s change keeps the hash", name)
		}
	}
	if podAnnotations := Deployment(base, specstest.Image, nil).Spec.Template.Annotations; podAnnotations[SpecHashAnnotation] != "" {
		t.Error("the pod template carries the spec hash")
	}
}

func TestLeaseArgs(t *testing.T) {
	withDeliveries := func(n int32) specstest.Option {
		return func(s *stsv1alpha1.SimpleTableServer) {
			s.Spec.Datasets = append(s.Spec.Datasets, stsv1alpha1.Dataset{Name: "logins", MaxDeliveries: ptr.To(n)},
				stsv1alpha1.Dataset{Name: "coupons"})
		}
	}
	tests := map[string]struct {
		leases stsv1alpha1.LeaseOptions
		opts   []specstest.Option
		want   []string
	}{
		"none: the server's defaults": {},
		"every option": {
			leases: stsv1alpha1.LeaseOptions{MaxLease: &metav1.Duration{Duration: 10 * time.Minute}, MaxDeliveries: ptr.To[int32](5),
				RequestIDWindow: &metav1.Duration{Duration: time.Minute}},
			want: []string{"--max-lease=10m0s", "--max-deliveries=5", "--request-id-window=1m0s"},
		},
		"a dataset's own max deliveries, 0 included": {
			opts: []specstest.Option{withDeliveries(0)},
			want: []string{"--max-deliveries-list=logins=0"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tableServer := specstest.New("a", append([]specstest.Option{specstest.WithServer(stsv1alpha1.ServerOptions{Leases: tc.leases})}, tc.opts...)...)
			if got := leaseArgs(tableServer); !slices.Equal(got, tc.want) {
				t.Errorf("args %q, want %q", got, tc.want)
			}
		})
	}
}
