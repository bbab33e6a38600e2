//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"github.com/sts-operator/sts-operator/internal/testutil"
)

// testDeleteRemovesChildren: deleting a SimpleTableServer removes its Deployment, ReplicaSet,
// pod, Service and EndpointSlices through the cluster's garbage collector.
func testDeleteRemovesChildren(t *testing.T) {
	ns := newNamespace(t, "gc")
	createConfigMap(t, ns, "gc", "gc.csv", testutil.Numbered("gc", 10))
	tableServer := newServer(ns, "doomed", configMapDataset("gc.csv", "gc", "gc.csv"))
	create(t, tableServer)
	waitServing(t, tableServer)
	if n := children(t.Context(), t, ns, tableServer.Name); n["Deployment"] != 1 || n["ReplicaSet"] != 1 || n["Pod"] != 1 || n["Service"] != 1 {
		t.Fatalf("children of a serving resource: %v, want one Deployment, ReplicaSet, Pod and Service", n)
	}
	if err := k8s.Delete(t.Context(), tableServer); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every child removed", func(ctx context.Context) error {
		if n := children(ctx, t, ns, tableServer.Name); len(n) > 0 {
			return fmt.Errorf("left: %v", n)
		}
		return nil
	})
}

// children counts the objects of a table server by kind.
func children(ctx context.Context, t *testing.T, ns, name string) map[string]int {
	t.Helper()
	instance := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name}
	counts := map[string]int{}
	count := func(kind string, n int, err error) {
		if err != nil {
			t.Fatalf("listing %ss: %v", kind, err)
		}
		if n > 0 {
			counts[kind] = n
		}
	}
	apps, core := clientset.AppsV1(), clientset.CoreV1()
	d, err := apps.Deployments(ns).List(ctx, instance)
	count("Deployment", len(d.Items), err)
	rs, err := apps.ReplicaSets(ns).List(ctx, instance)
	count("ReplicaSet", len(rs.Items), err)
	pods, err := core.Pods(ns).List(ctx, instance)
	count("Pod", len(pods.Items), err)
	svc, err := core.Services(ns).List(ctx, instance)
	count("Service", len(svc.Items), err)
	eps, err := clientset.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + name})
	count("EndpointSlice", len(eps.Items), err)
	return counts
}

// operatorPods are the names of the operator's pods that run and are ready.
func operatorPods(ctx context.Context) ([]string, error) {
	pods, err := clientset.CoreV1().Pods(env.operatorNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=sts-operator,app.kubernetes.io/instance=" + env.release,
	})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
	}
	return names, nil
}

// testHelmUpgradeKeepsResources: `helm upgrade` replaces the operator's pod but not the table
// servers (whose pods hold the lists), and the new operator keeps their status current.
func testHelmUpgradeKeepsResources(t *testing.T) {
	ns := newNamespace(t, "upgrade")
	createConfigMap(t, ns, "keep", "keep.csv", testutil.Numbered("keep", 100))
	tableServer := newServer(ns, "survivor", configMapDataset("keep.csv", "keep", "keep.csv"))
	create(t, tableServer)
	waitServing(t, tableServer)
	server := serverPod(t, ns, tableServer.Name)
	before, err := operatorPods(t.Context())
	if err != nil || len(before) == 0 {
		t.Fatalf("no ready operator pod before the upgrade (%v): is the operator installed as release %s in %s?", err, env.release, env.operatorNamespace)
	}

	// A changed pod annotation makes the upgrade roll the operator's Deployment.
	mustRun(t, env.helm, "upgrade", env.release, env.chart, "--namespace", env.operatorNamespace, "--reuse-values",
		"--set-string", "podAnnotations.e2e-upgraded-at="+time.Now().UTC().Format("20060102T150405"), "--wait", "--timeout", "3m")
	eventually(t, 2*time.Minute, "only new operator pods ready", func(ctx context.Context) error {
		after, err := operatorPods(ctx)
		if err == nil && (len(after) == 0 || slices.ContainsFunc(after, func(p string) bool { return slices.Contains(before, p) })) {
			err = fmt.Errorf("ready operator pods %v, before the upgrade %v", after, before)
		}
		return err
	})

	if now := serverPod(t, ns, tableServer.Name); now.UID != server.UID {
		t.Errorf("the upgrade replaced the table-server pod %s with %s: its lists would be lost", server.Name, now.Name)
	}
	for range 10 {
		if a, err := serverCall(t.Context(), ns, tableServer.Name, "READ", map[string]string{"FILENAME": "keep.csv", "KEEP": "FALSE"}); err != nil || !a.OK {
			t.Fatalf("READ after the upgrade: %+v, %v", a, err)
		}
	}
	waitListLength(t, tableServer, "keep.csv", 90) // the new operator reads the server
	waitServing(t, tableServer)
}

// testHelmUninstallLeavesNothing: after `helm uninstall` nothing of the operator is left in the
// cluster but the CRD, which the chart keeps on purpose (crds.keep) so that uninstalling never
// deletes users' SimpleTableServers.
func testHelmUninstallLeavesNothing(t *testing.T) {
	mustRun(t, env.helm, "uninstall", env.release, "--namespace", env.operatorNamespace, "--wait", "--timeout", "3m")
	var left []string
	eventually(t, time.Minute, "nothing of the operator left", func(ctx context.Context) error {
		var err error
		if left, err = operatorLeftovers(ctx); err == nil && len(left) > 0 {
			err = fmt.Errorf("left: %s", strings.Join(left, ", "))
		}
		return err
	})
}

// operatorLeftovers lists what remains of the release: every object in the operator's namespace
// but those Kubernetes puts in each namespace, and every object elsewhere that Helm labelled or
// annotated as the release's, except a CRD that asks Helm to keep it.
func operatorLeftovers(ctx context.Context) ([]string, error) {
	lists, err := clientset.Discovery().ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	mc, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || r.Name == "events" || !slices.Contains(r.Verbs, "list") {
				continue
			}
			objs, err := mc.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for _, o := range objs.Items {
				if ofRelease(r.Kind, &o.ObjectMeta) {
					left = append(left, r.Kind+" "+strings.TrimPrefix(o.Namespace+"/"+o.Name, "/"))
				}
			}
		}
	}
	return left, nil
}

// ofRelease says whether an object belongs to the uninstalled operator.
func ofRelease(kind string, o *metav1.ObjectMeta) bool {
	if o.Namespace == env.operatorNamespace {
		everyNamespaceHasOne := (kind == "ServiceAccount" && o.Name == "default") || (kind == "ConfigMap" && o.Name == "kube-root-ca.crt")
		return !everyNamespaceHasOne
	}
	helmOwned := o.Annotations["meta.helm.sh/release-name"] == env.release && o.Annotations["meta.helm.sh/release-namespace"] == env.operatorNamespace
	labelled := o.Labels["app.kubernetes.io/instance"] == env.release && o.Labels["app.kubernetes.io/managed-by"] == "Helm"
	kept := kind == "CustomResourceDefinition" && o.Annotations["helm.sh/resource-policy"] == "keep"
	return (helmOwned || labelled) && !kept
}
