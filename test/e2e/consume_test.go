//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// consumeArgs are the arguments of stsload pods that READ list with KEEP=FALSE until it is
// empty and record every line they got on the ledger.
func consumeArgs(tableServer, ledger *stsv1alpha1.SimpleTableServer, list string, extra ...string) []string {
	return append([]string{"consume", "-url", tableServer.Status.Endpoint, "-list", list, "-ledger", ledger.Status.Endpoint}, extra...)
}

// newLedger starts the table server where consume pods record what they read (stsload -ledger).
// Their logs cannot carry it: on a slow machine the container runtime once dropped the last 130
// of a pod's 4 994 printed lines (its summary, on stderr, arrived), while a LOAD is acknowledged.
func newLedger(t *testing.T, ns string) *stsv1alpha1.SimpleTableServer {
	t.Helper()
	ledger := newServer(ns, "ledger")
	create(t, ledger)
	return waitServing(t, ledger)
}

// consumedByPod reads what each consume pod of a completed Job recorded on the ledger.
func consumedByPod(t *testing.T, job *batchv1.Job, ledger *stsv1alpha1.SimpleTableServer) map[string]consumed {
	t.Helper()
	var byPod map[string]consumed
	eventually(t, time.Minute, "what the pods of Job "+job.Name+" recorded", func(ctx context.Context) error {
		pods, err := clientset.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
		if err != nil {
			return err
		}
		byPod = map[string]consumed{}
		for _, p := range pods.Items {
			summary, err := serverExport(ctx, ledger.Namespace, ledger.Name, p.Name+".summary")
			if err != nil {
				return fmt.Errorf("pod %s recorded no summary: %w", p.Name, err)
			}
			lines, err := serverExport(ctx, ledger.Namespace, ledger.Name, p.Name+".lines")
			if err != nil {
				return fmt.Errorf("pod %s recorded no lines: %w", p.Name, err)
			}
			c, err := parseConsumed(summary, lines)
			if err != nil {
				return fmt.Errorf("pod %s: %w", p.Name, err)
			}
			byPod[p.Name] = c
		}
		return nil
	})
	return byPod
}

// handedOut checks that no line was handed out twice and none that the input lacks, and
// returns how many input lines nobody got.
func handedOut(t *testing.T, input []string, byPod map[string]consumed) (missing int) {
	t.Helper()
	seen := make(map[string]string, len(input)) // line -> pod that got it
	for _, l := range input {
		seen[l] = ""
	}
	var twice, unknown []string
	for pod, c := range byPod {
		for _, l := range c.lines {
			first, ok := seen[l]
			switch {
			case !ok:
				unknown = append(unknown, l)
			case first != "":
				twice = append(twice, fmt.Sprintf("%s (%s and %s)", l, first, pod))
			default:
				seen[l] = pod
			}
		}
	}
	if len(twice) > 0 {
		t.Errorf("%d lines were handed out twice, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if len(unknown) > 0 {
		t.Errorf("%d lines that the dataset lacks were handed out, e.g. %q", len(unknown), unknown[:min(5, len(unknown))])
	}
	for _, pod := range seen {
		if pod == "" {
			missing++
		}
	}
	return missing
}

// handedOutAcross is handedOut for a run that a disruption crossed: a request that broke in
// flight (its answer lost) may have taken a line, so lines nobody got are lost only beyond the
// number of broken requests; cause names the disruption in the error. It returns how many input
// lines nobody got.
func handedOutAcross(t *testing.T, input []string, byPod map[string]consumed, cause string) (missing int) {
	t.Helper()
	missing = handedOut(t, input, byPod)
	broken := 0
	for pod, c := range byPod {
		t.Logf("pod %s read %d lines (%d requests refused, %d broken)", pod, c.read, c.refused, c.failed)
		broken += c.failed
	}
	if missing > broken {
		t.Errorf("%d lines were never handed out, but only %d requests broke in flight: %s", missing, broken, cause)
	}
	return missing
}

// testConsumeOnce: four injector pods with eight workers each drain a 20 000-line single-use
// dataset through the Service with READ KEEP=FALSE. Together they get every line exactly once,
// and the status reaches 0.
func testConsumeOnce(t *testing.T) {
	ns := newNamespace(t, "consume")
	input := testutil.Numbered("single", 20000)
	createConfigMap(t, ns, "single", "single.csv", input)
	tableServer := newServer(ns, "single", configMapDataset("single.csv", "single", "single.csv"))
	create(t, tableServer)
	ledger := newLedger(t, ns)
	tableServer = waitServing(t, tableServer)
	waitListLength(t, tableServer, "single.csv", 20000)

	// A rate per pod keeps each pod busy for several seconds, so all four share the work
	// even when their pods start a few seconds apart.
	job := startJob(t, ns, jobSpec{name: "injectors", pods: 4, args: consumeArgs(tableServer, ledger, "single.csv", "-workers", "8", "-rate", "300")})
	waitJob(t, job, 5*time.Minute)
	byPod := consumedByPod(t, job, ledger)
	if missing := handedOut(t, input, byPod); missing > 0 {
		t.Errorf("%d lines were never handed out", missing)
	}
	for pod, c := range byPod {
		t.Logf("pod %s read %d lines (%d requests refused, %d broken)", pod, c.read, c.refused, c.failed)
		if c.read == 0 {
			t.Errorf("pod %s read no line: the injectors did not share the dataset", pod)
		}
		if c.failed > 0 {
			t.Errorf("pod %s had %d requests break in flight on a server that was never disturbed", pod, c.failed)
		}
	}
	waitListLength(t, tableServer, "single.csv", 0)
}

// testRestartKeepsConsumption: with storage, the table-server pod is deleted while four
// injector pods consume. The replacement restores the lists from the server's journal and no
// line is handed out twice across the two pods; only a line whose request was in flight when
// the pod went away may be lost.
func testRestartKeepsConsumption(t *testing.T) {
	ns := newNamespace(t, "restart")
	input := testutil.Numbered("durable", 10000)
	createConfigMap(t, ns, "durable", "durable.csv", input)
	claim := hostPathClaim(t, ns, "state")
	fillClaim(t, ns, claim, "", "", 0)
	tableServer := newServer(ns, "durable", configMapDataset("durable.csv", "durable", "durable.csv"))
	tableServer.Spec.Storage = &stsv1alpha1.Storage{ExistingClaim: claim}
	create(t, tableServer)
	requireDurability(t, tableServer)
	ledger := newLedger(t, ns)
	tableServer = waitServing(t, tableServer)
	first := serverPod(t, ns, tableServer.Name)

	// 400 READs a second in all: the run lasts about 25 seconds.
	job := startJob(t, ns, jobSpec{name: "injectors", pods: 4, args: consumeArgs(tableServer, ledger, "durable.csv", "-workers", "4", "-rate", "100")})
	eventually(t, 3*time.Minute, "a third of the lines consumed", func(ctx context.Context) error {
		n, err := serverLength(ctx, ns, tableServer.Name, "durable.csv")
		if err == nil && n > 2*len(input)/3 {
			err = fmt.Errorf("%d lines left", n)
		}
		return err
	})
	if err := k8s.Delete(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted the table-server pod %s in the middle of the run", first.Name)
	waitJob(t, job, 5*time.Minute)
	byPod := consumedByPod(t, job, ledger)

	handedOutAcross(t, input, byPod, "the replacement did not restore the consumption state")
	if second := serverPod(t, ns, tableServer.Name); second.UID == first.UID {
		t.Errorf("the table-server pod %s was not replaced", first.Name)
	}
	waitListLength(t, tableServer, "durable.csv", 0)
}

// requireDurability fails the test when this build cannot keep the lists across a restart: the
// operator must pass --state-dir for spec.storage, and the table server must know it. Both
// exist, so a build without them is a regression, not a reason to skip.
func requireDurability(t *testing.T, tableServer *stsv1alpha1.SimpleTableServer) {
	t.Helper()
	d := &appsv1.Deployment{}
	eventually(t, time.Minute, "the table server's Deployment", func(ctx context.Context) error {
		return k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), d)
	})
	if !slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--state-dir") }) {
		t.Fatalf("the operator did not pass --state-dir for spec.storage: the table server's journal is off (args %q)", d.Spec.Template.Spec.Containers[0].Args)
	}
	eventually(t, 3*time.Minute, "the table server started with --state-dir", func(ctx context.Context) error {
		pods, err := clientset.CoreV1().Pods(tableServer.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + tableServer.Name})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Ready {
					return nil
				}
				if cs.RestartCount == 0 && cs.State.Terminated == nil {
					continue
				}
				log, _ := clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, Previous: cs.State.Terminated == nil}).DoRaw(ctx)
				if strings.Contains(string(log), "flag provided but not defined: -state-dir") {
					t.Fatalf("the table server in %s does not know --state-dir", cs.Image)
				}
			}
		}
		return fmt.Errorf("no table-server container is ready")
	})
}

// serverPod returns the one running table-server pod of a resource.
func serverPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, 3*time.Minute, "the running table-server pod of "+name, func(ctx context.Context) error {
		pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
		if err != nil {
			return err
		}
		var running []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		if len(running) != 1 {
			return fmt.Errorf("%d running pods", len(running))
		}
		pod = &running[0]
		return nil
	})
	return pod
}
