//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The test cluster's Redis, examples/redis/redis.yaml as users apply it, with its image replaced
// by E2E_REDIS_IMAGE (make e2e: Debian's redis-server and redis-cli packed by hack/imagebuild).
const (
	redisManifest      = "../../examples/redis/redis.yaml"
	redisManifestImage = "docker.io/library/redis:7.2"
	redisSelector      = "app.kubernetes.io/name=redis,app.kubernetes.io/component=test-redis"
)

// redisImage is the image the suite's Redis pods run.
func redisImage() string {
	if env.redisImage != "" {
		return env.redisImage
	}
	return redisManifestImage
}

// deployRedis applies examples/redis/redis.yaml in ns, waits until its pod is Ready and behind
// the Service, and returns the address table servers and clients use: redis.<ns>.svc:6379.
func deployRedis(t *testing.T, ns string) string {
	t.Helper()
	manifest, err := os.ReadFile(redisManifest)
	if err != nil {
		t.Fatal(err)
	}
	text := string(manifest)
	if n := strings.Count(text, "image: "+redisManifestImage+"\n"); n != 1 {
		t.Fatalf("%s names the image %s %d times, want once", redisManifest, redisManifestImage, n)
	}
	text = strings.Replace(text, "image: "+redisManifestImage+"\n", "image: "+redisImage()+"\n", 1)
	if out, errOut, err := kubectl(t, text, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply %s: %v\n%s%s", redisManifest, err, out, errOut)
	}
	waitRedisReady(t, ns)
	return "redis." + ns + ".svc:6379"
}

// waitRedisReady waits until a Redis pod of ns that is not being deleted is Ready and is a
// ready endpoint of the Service redis, and returns its name: after deleteRedisPod, the
// replacement.
func waitRedisReady(t *testing.T, ns string) string {
	t.Helper()
	var name string
	eventually(t, 3*time.Minute, "a Ready Redis pod behind the Service redis in "+ns, func(ctx context.Context) error {
		pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: redisSelector})
		if err != nil {
			return err
		}
		var ready *corev1.Pod
		var states []string
		for i, p := range pods.Items {
			states = append(states, p.Name+" "+podState(&p))
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready = &pods.Items[i]
			}
		}
		if ready == nil {
			return fmt.Errorf("pods: %v", states)
		}
		endpointSlices, err := clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=redis"})
		if err != nil {
			return err
		}
		for _, s := range endpointSlices.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && e.TargetRef.Name == ready.Name && ptr.Deref(e.Conditions.Ready, false) {
					name = ready.Name
					return nil
				}
			}
		}
		return fmt.Errorf("pod %s is Ready but not yet a ready endpoint of the Service", ready.Name)
	})
	return name
}

// deleteRedisPod deletes the Redis pods of ns, as a node failure or an eviction would (the
// Deployment makes a new, empty one: the example keeps no data), and returns at once; wait for
// the replacement with waitRedisReady.
func deleteRedisPod(t *testing.T, ns string) {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: redisSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("no Redis pod in %s to delete", ns)
	}
	for _, p := range pods.Items {
		if err := clientset.CoreV1().Pods(ns).Delete(t.Context(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("deleting Redis pod %s: %v", p.Name, err)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState is a pod's phase and why its containers wait, for failure messages.
func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil {
			s += fmt.Sprintf(" %s: %s %s", c.Name, w.Reason, w.Message)
		}
	}
	if p.DeletionTimestamp != nil {
		s += " (deleting)"
	}
	return s
}

// redisCommands runs each command with redis-cli (from the Redis image) against address, one
// process and connection after another in a pod of a Job named name, and returns what each
// printed. A command Redis answers with an error fails the test.
func redisCommands(t *testing.T, ns, name, address string, commands ...[]string) []string {
	t.Helper()
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		t.Fatal(err)
	}
	sc := &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](65532),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	var containers []corev1.Container
	for i, cmd := range commands {
		containers = append(containers, corev1.Container{
			Name:            fmt.Sprintf("cmd%d", i),
			Image:           redisImage(),
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         append([]string{"redis-cli", "-h", host, "-p", port, "-e"}, cmd...),
			SecurityContext: sc,
		})
	}
	last := len(containers) - 1
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			// The commands run in order, the last as the pod's container. A container that
			// fails (the Service not yet programmed, say) runs again in the same pod.
			BackoffLimit:          ptr.To[int32](2),
			ActiveDeadlineSeconds: ptr.To[int64](180),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                corev1.RestartPolicyOnFailure,
				AutomountServiceAccountToken: ptr.To(false),
				EnableServiceLinks:           ptr.To(false),
				InitContainers:               containers[:last],
				Containers:                   containers[last:],
			}},
		},
	}
	create(t, job)
	eventually(t, 3*time.Minute, "Job "+name+" complete", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		for _, c := range job.Status.Conditions {
			if c.Status == corev1.ConditionTrue && c.Type == batchv1.JobFailed {
				t.Fatalf("Job %s failed (%s: %s):\n%v", name, c.Reason, c.Message, jobContainerLogs(t, job))
			}
			if c.Status == corev1.ConditionTrue && c.Type == batchv1.JobComplete {
				return nil
			}
		}
		return fmt.Errorf("%d succeeded", job.Status.Succeeded)
	})
	logs := jobContainerLogs(t, job)
	outputs := make([]string, len(commands))
	for i := range commands {
		out, ok := logs[fmt.Sprintf("cmd%d", i)]
		if !ok {
			t.Fatalf("Job %s: no output of %q: %v", name, commands[i], logs)
		}
		outputs[i] = strings.TrimSuffix(out, "\n")
	}
	return outputs
}

// jobContainerLogs is what each container printed in the Job's succeeded pod, or in its last one.
func jobContainerLogs(t *testing.T, job *batchv1.Job) map[string]string {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(job.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the pods of Job %s: %d, %v", job.Name, len(pods.Items), err)
	}
	pod := pods.Items[len(pods.Items)-1]
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			pod = p
		}
	}
	logs := map[string]string{}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		b, err := clientset.CoreV1().Pods(job.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(t.Context())
		if err != nil {
			logs[c.Name+" (no logs)"] = err.Error()
			continue
		}
		logs[c.Name] = string(b)
	}
	return logs
}

// TestRedisExample runs examples/redis/redis.yaml as a user would, with the suite's Redis
// image, and checks that it serves: redis-cli answers inside the pod, a client pod elsewhere
// stores a key through the Service and reads it back on another connection, and the server runs
// as the manifest says (no persistence). A deleted pod comes back, empty. It needs no operator.
func TestRedisExample(t *testing.T) {
	ns := newNamespace(t, "redis")
	addr := deployRedis(t, ns)
	if want := "redis." + ns + ".svc:6379"; addr != want {
		t.Errorf("deployRedis returned %q, want %q", addr, want)
	}

	pods, err := clientset.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: redisSelector})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("Redis pods: %d, %v", len(pods.Items), err)
	}
	if got := pods.Items[0].Spec.Containers[0].Image; got != redisImage() {
		t.Errorf("the Redis pod runs %s, want %s", got, redisImage())
	}

	// In the pod, as the readiness probe and `kubectl exec` use it.
	exec := func(args ...string) string {
		t.Helper()
		return strings.TrimSpace(mustRun(t, env.kubectl, append([]string{"exec", "-n", ns, "deployment/redis", "--", "redis-cli", "-e"}, args...)...))
	}
	if got := exec("ping"); got != "PONG" {
		t.Errorf("redis-cli ping in the pod printed %q, want PONG", got)
	}
	for _, c := range []struct{ param, want string }{{"save", "save\n"}, {"appendonly", "appendonly\nno"}, {"protected-mode", "protected-mode\nno"}, {"maxmemory-policy", "maxmemory-policy\nnoeviction"}} {
		if got := exec("config", "get", c.param); got != strings.TrimSpace(c.want) {
			t.Errorf("CONFIG GET %s = %q, want %q", c.param, got, c.want)
		}
	}

	// From another pod, through the Service's DNS name: each command is a new connection.
	value := "stored-by-" + ns
	got := redisCommands(t, ns, "client", addr, []string{"SET", "e2e-key", value}, []string{"GET", "e2e-key"}, []string{"DBSIZE"})
	if want := []string{"OK", value, "1"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("SET, GET, DBSIZE through %s printed %q, want %q", addr, got, want)
	}

	// A replaced pod serves again at the same address, without the data (no persistence).
	before := pods.Items[0].Name
	deleteRedisPod(t, ns)
	if after := waitRedisReady(t, ns); after == before {
		t.Errorf("waitRedisReady returned the deleted pod %s", before)
	}
	if got := redisCommands(t, ns, "client-after-restart", addr, []string{"DBSIZE"}); got[0] != "0" {
		t.Errorf("DBSIZE after the pod was replaced = %q, want 0: the example keeps no data", got[0])
	}
}
