//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// settings come from the environment that `make e2e` sets (see doc.go).
type settings struct {
	loadImage         string // the stsload image
	redisImage        string // replaces examples/redis's image when set (E2E_REDIS_IMAGE)
	kubectl, helm     string // binaries
	chart, release    string // the Helm chart's path and the release `make e2e` installed
	operatorNamespace string
	hostPathRoot      string // static hostPath volumes live under it on the node
	artifacts         string // a failed test's dump
}

var (
	env        settings
	k8s        client.Client
	clientset  *kubernetes.Clientset
	restConfig *rest.Config
)

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func setup() error {
	get := func(name, fallback string) string {
		if v := os.Getenv(name); v != "" {
			return v
		}
		return fallback
	}
	env = settings{
		loadImage:         os.Getenv("E2E_LOAD_IMAGE"),
		redisImage:        os.Getenv("E2E_REDIS_IMAGE"),
		kubectl:           get("E2E_KUBECTL", "kubectl"),
		helm:              get("E2E_HELM", "helm"),
		chart:             get("E2E_CHART", "../../charts/sts-operator"),
		release:           get("E2E_RELEASE", "sts-operator"),
		operatorNamespace: get("E2E_OPERATOR_NAMESPACE", "sts-operator-system"),
		hostPathRoot:      get("E2E_HOSTPATH_ROOT", "/tmp/sts-e2e"),
		artifacts:         get("E2E_ARTIFACTS", "artifacts"),
	}
	if env.loadImage == "" {
		return errors.New("E2E_LOAD_IMAGE is not set: run the suite with `make e2e`, or set it to the stsload image that hack/cluster/build.sh writes")
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100 // tests poll in parallel
	// Listing every resource type (the uninstall test) would print each deprecation warning.
	cfg.WarningHandler = rest.NoWarnings{}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := stsv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	restConfig = cfg
	return nil
}

// e2eLabel marks the namespaces the suite creates, so `make e2e` can find what a killed run left.
const e2eLabel = "sts.tableserver.dev/e2e"

// newNamespace creates a namespace for one test, deleted when the test ends. A failed test
// first leaves the namespace's objects, events and logs under E2E_ARTIFACTS.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + prefix + "-", Labels: map[string]string{e2eLabel: "true"}}}
	if err := k8s.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpNamespace(t, ns.Name)
		}
		if err := k8s.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// eventually is testutil.Eventually every half second, which a cluster's API server and pods
// bear, with what the test waits for named in the failure.
func eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	testutil.Eventually(t, timeout, 500*time.Millisecond, func() error {
		if err := check(t.Context()); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

func createConfigMap(t *testing.T, ns, name, key string, lines []string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{key: testutil.File(lines)}}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
}

func createSecret(t *testing.T, ns, name, key string, lines []string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{key: testutil.File(lines)}}
	if err := k8s.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

// newServer returns a SimpleTableServer whose status follows the server every 2 seconds.
func newServer(ns, name string, datasets ...stsv1alpha1.Dataset) *stsv1alpha1.SimpleTableServer {
	return &stsv1alpha1.SimpleTableServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: stsv1alpha1.SimpleTableServerSpec{
			Datasets:              datasets,
			StatusRefreshInterval: &metav1.Duration{Duration: 2 * time.Second},
		},
	}
}

func configMapDataset(list, name, key string) stsv1alpha1.Dataset {
	return stsv1alpha1.Dataset{Name: list, ConfigMap: &stsv1alpha1.KeySelector{Name: name, Key: key}}
}

func secretDataset(list, name, key string) stsv1alpha1.Dataset {
	return stsv1alpha1.Dataset{Name: list, Secret: &stsv1alpha1.KeySelector{Name: name, Key: key}}
}

func claimDataset(list, claim, path string) stsv1alpha1.Dataset {
	return stsv1alpha1.Dataset{Name: list, PersistentVolumeClaim: &stsv1alpha1.ClaimSource{ClaimName: claim, Path: path}}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// waitServing waits until the resource's Ready condition is True for its current generation,
// and returns the resource as it is then.
func waitServing(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer) *stsv1alpha1.SimpleTableServer {
	t.Helper()
	got := &stsv1alpha1.SimpleTableServer{}
	eventually(t, 3*time.Minute, "SimpleTableServer "+tableServer.Name+" Ready", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, stsv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
			return fmt.Errorf("conditions %s", conditionSummary(got))
		}
		return nil
	})
	return got
}

func conditionSummary(tableServer *stsv1alpha1.SimpleTableServer) string {
	var parts []string
	for _, c := range tableServer.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// waitListLength waits until status.lists reports length for list.
func waitListLength(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer, list string, length int64) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("status.lists[%s] = %d", list, length), func(ctx context.Context) error {
		got := &stsv1alpha1.SimpleTableServer{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), got); err != nil {
			return err
		}
		for _, l := range got.Status.Lists {
			if l.Name == list {
				if l.Length == length {
					return nil
				}
				return fmt.Errorf("length %d", l.Length)
			}
		}
		return fmt.Errorf("no such list in %v", got.Status.Lists)
	})
}

// serverCall sends /sts/<command> to a table server through the API server's proxy to its
// Service, so the test process needs no route into the cluster.
func serverCall(ctx context.Context, ns, name, command string, params map[string]string) (protocol.Answer, error) {
	q := map[string]string{"FORMAT": "JSON"}
	for k, v := range params {
		q[k] = v
	}
	body, err := clientset.CoreV1().Services(ns).ProxyGet("http", name, "9191", "sts/"+command, q).DoRaw(ctx)
	var a protocol.Answer
	if jsonErr := json.Unmarshal(body, &a); jsonErr == nil && a.Command != "" {
		return a, nil // a KO (HTTP 404 for an empty list, say) is an answer too
	}
	if err == nil {
		err = fmt.Errorf("%s: not the JSON form: %.200q", command, body)
	}
	return a, err
}

// serverLength is a list's length as the server reports it now.
func serverLength(ctx context.Context, ns, name, list string) (int, error) {
	a, err := serverCall(ctx, ns, name, "STATUS", nil)
	if err != nil {
		return 0, err
	}
	for _, l := range a.Lists {
		if l.Name == list {
			return int(l.Length), nil
		}
	}
	return 0, fmt.Errorf("the server has no list %s", list)
}

// serverExport is a list's lines (EXPORT), through the API server's proxy like serverCall.
func serverExport(ctx context.Context, ns, name, list string) ([]string, error) {
	body, err := clientset.CoreV1().Services(ns).ProxyGet("http", name, "9191", "sts/EXPORT", map[string]string{"FILENAME": list}).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("EXPORT %s: %w (%.200q)", list, err, body)
	}
	if bytes.HasPrefix(body, []byte("<html><title>KO</title>")) { // an unknown list: HTTP 200, as in the plugin
		return nil, fmt.Errorf("EXPORT %s: %s", list, body)
	}
	if len(body) == 0 {
		return nil, nil
	}
	return strings.Split(strings.TrimSuffix(string(body), "\n"), "\n"), nil
}

// jobSpec is a Job of stsload pods.
type jobSpec struct {
	name       string
	args       []string
	pods       int32  // parallelism and completions
	indexed    bool   // JOB_COMPLETION_INDEX numbers the pods
	asRoot     bool   // to prepare a hostPath volume for the table server's user
	claim      string // a claim to mount at claimMount
	claimMount string
}

// startJob creates the Job; waitJob waits for it.
func startJob(t *testing.T, ns string, spec jobSpec) *batchv1.Job {
	t.Helper()
	sc := &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if spec.asRoot {
		sc = &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
	}
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		Containers: []corev1.Container{{
			Name:            "stsload",
			Image:           env.loadImage,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Args:            spec.args,
			SecurityContext: sc,
		}},
	}
	if spec.claim != "" {
		pod.Volumes = []corev1.Volume{{Name: "claim", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: spec.claim},
		}}}
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "claim", MountPath: spec.claimMount}}
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: spec.name, Namespace: ns},
		Spec: batchv1.JobSpec{
			Parallelism:           ptr.To(spec.pods),
			Completions:           ptr.To(spec.pods),
			BackoffLimit:          ptr.To[int32](0), // a retried pod would consume more lines
			ActiveDeadlineSeconds: ptr.To[int64](600),
			Template:              corev1.PodTemplateSpec{Spec: pod},
		},
	}
	if spec.indexed {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}
	create(t, job)
	return job
}

// waitJob waits until every pod of the Job succeeded.
func waitJob(t *testing.T, job *batchv1.Job, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "Job "+job.Name+" complete", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		for _, c := range job.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return nil
			case batchv1.JobFailed:
				t.Fatalf("Job %s failed (%s: %s); its pods said:\n%s", job.Name, c.Reason, c.Message, logsText(jobLogs(t, job)))
			}
		}
		return fmt.Errorf("%d of %d pods succeeded", job.Status.Succeeded, ptr.Deref(job.Spec.Completions, 1))
	})
}

func jobLogs(t *testing.T, job *batchv1.Job) map[string]string {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(job.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]string{}
	for _, p := range pods.Items {
		b, err := clientset.CoreV1().Pods(job.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "stsload"}).DoRaw(t.Context())
		if err != nil {
			logs[p.Name] = "(no logs: " + err.Error() + ")"
			continue
		}
		logs[p.Name] = string(b)
	}
	return logs
}

func logsText(logs map[string]string) string {
	var b strings.Builder
	for pod, l := range logs {
		if len(l) > 2000 {
			l = "..." + l[len(l)-2000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", pod, l)
	}
	return b.String()
}

// consumed is what one stsload consume pod recorded.
type consumed struct {
	lines                 []string
	read, refused, failed int
}

var consumeSummary = regexp.MustCompile(`^stsload consume list=\S+ read=(\d+) refused=(\d+) failed=(\d+)$`)

// parseConsumed reads what a consume pod recorded: its summary and the lines it got. It fails
// when the summary is not one or counts other than the lines.
func parseConsumed(summary, lines []string) (consumed, error) {
	c := consumed{lines: lines}
	if len(summary) != 1 {
		return c, fmt.Errorf("summary %q: want one line", summary)
	}
	m := consumeSummary.FindStringSubmatch(summary[0])
	if m == nil {
		return c, fmt.Errorf("summary %q is not stsload's", summary[0])
	}
	c.read, _ = strconv.Atoi(m[1])
	c.refused, _ = strconv.Atoi(m[2])
	c.failed, _ = strconv.Atoi(m[3])
	if c.read != len(c.lines) {
		return c, fmt.Errorf("recorded %d lines but counted %d reads", len(c.lines), c.read)
	}
	return c, nil
}

// hostPathClaim creates a static hostPath PersistentVolume (E2E_HOSTPATH_ROOT/<ns>/<name> on
// one node, which every pod that mounts it is then scheduled to) and a claim named name bound
// to it. Clusters without a provisioner can run it.
func hostPathClaim(t *testing.T, ns, name string) string {
	t.Helper()
	size := resource.MustParse("1Gi")
	nodes, err := clientset.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("listing the nodes: %d nodes, %v", len(nodes.Items), err)
	}
	node := nodes.Items[0].Labels[corev1.LabelHostname]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name, Labels: map[string]string{e2eLabel: "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "e2e-hostpath",
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: filepath.Join(env.hostPathRoot, ns, name),
				Type: ptr.To(corev1.HostPathDirectoryOrCreate),
			}},
		},
	}
	create(t, pv)
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), pv); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting PersistentVolume %s: %v", pv.Name, err)
		}
	})
	create(t, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("e2e-hostpath"),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	})
	return name
}

// tableServerUser owns the files the table server writes (the image's non-root user).
const tableServerUser = "65532"

// fillClaim hands the claim's root to the table server's user and, with lines, writes them to
// file at its root: a hostPath volume ignores the pod's fsGroup.
func fillClaim(t *testing.T, ns, claim, file, prefix string, lines int) {
	t.Helper()
	args := []string{"fill", "-dir", "/claim", "-owner", tableServerUser}
	if file != "" {
		args = append(args, "-file", file, "-prefix", prefix, "-count", strconv.Itoa(lines))
	}
	waitJob(t, startJob(t, ns, jobSpec{name: "fill-" + claim, args: args, pods: 1, asRoot: true, claim: claim, claimMount: "/claim"}), 3*time.Minute)
}

// run runs a command-line tool with the test's environment (KUBECONFIG).
func run(ctx context.Context, stdin, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func kubectl(t *testing.T, stdin string, args ...string) (string, string, error) {
	return run(t.Context(), stdin, env.kubectl, args...)
}

// mustRun runs a tool and fails the test when it fails.
func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, errOut, err := run(t.Context(), "", name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// dumpNamespace writes a namespace's objects, events and pod logs, and the operator's log,
// under E2E_ARTIFACTS/<test name>.
func dumpNamespace(t *testing.T, ns string) {
	dir := filepath.Join(env.artifacts, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("dump: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	save := func(file string, args ...string) {
		out, errOut, _ := run(ctx, "", env.kubectl, args...)
		_ = os.WriteFile(filepath.Join(dir, file), []byte(out+errOut), 0o644)
	}
	save("objects.yaml", "-n", ns, "get", "simpletableservers,deployments,replicasets,pods,services,jobs,configmaps,persistentvolumeclaims", "-o", "yaml")
	save("events.txt", "-n", ns, "get", "events", "--sort-by", ".lastTimestamp")
	save("pods.txt", "-n", ns, "describe", "pods")
	if pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			save("logs-"+p.Name+".txt", "-n", ns, "logs", p.Name, "--all-containers", "--prefix", "--timestamps")
		}
	}
	save("operator.log", "-n", env.operatorNamespace, "logs", "deployment/"+env.release, "--all-containers", "--timestamps")
	t.Logf("the namespace's objects, events and logs are in %s", dir)
}
