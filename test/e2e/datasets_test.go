//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// testDatasets: datasets from a ConfigMap, a Secret and a claim are loaded into their lists,
// status.lists shows their lengths and `kubectl get` the printer columns.
func testDatasets(t *testing.T) {
	ns := newNamespace(t, "datasets")
	createConfigMap(t, ns, "logins", "logins.csv", testutil.Numbered("cm", 120))
	createSecret(t, ns, "cards", "cards.csv", testutil.Numbered("secret", 45))
	claim := hostPathClaim(t, ns, "datasets")
	fillClaim(t, ns, claim, "big.csv", "pvc", 3000)

	tableServer := newServer(ns, "mixed",
		configMapDataset("logins.csv", "logins", "logins.csv"),
		secretDataset("cards.csv", "cards", "cards.csv"),
		claimDataset("big.csv", claim, "big.csv"))
	create(t, tableServer)
	got := waitServing(t, tableServer)

	lengths := map[string]int64{}
	for _, l := range got.Status.Lists {
		lengths[l.Name] = l.Length
	}
	want := map[string]int64{"logins.csv": 120, "cards.csv": 45, "big.csv": 3000}
	if fmt.Sprint(lengths) != fmt.Sprint(want) {
		t.Errorf("status.lists = %v, want %v", lengths, want)
	}
	if got.Status.ListCount != 3 || got.Status.TotalLines != 3165 {
		t.Errorf("status listCount %d totalLines %d, want 3 and 3165", got.Status.ListCount, got.Status.TotalLines)
	}
	if want := "http://mixed." + ns + ".svc:9191"; got.Status.Endpoint != want {
		t.Errorf("status.endpoint = %q, want %q", got.Status.Endpoint, want)
	}

	// The lists hold the sources' lines, in order.
	for list, first := range map[string]string{"logins.csv": "cm-000000", "cards.csv": "secret-000000", "big.csv": "pvc-000000"} {
		a, err := serverCall(t.Context(), ns, "mixed", "READ", map[string]string{"FILENAME": list, "READ_MODE": "FIRST", "KEEP": "TRUE"})
		if err != nil || !a.OK || ptr.Deref(a.Value, "") != first {
			t.Errorf("READ FIRST of %s = %q in %+v, %v; want %s", list, ptr.Deref(a.Value, ""), a, err, first)
		}
	}

	// By the short name, as README's commands do.
	out, errOut, err := kubectl(t, "", "get", "stserver", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl get stserver: %v\n%s", err, errOut)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 2 {
		t.Fatalf("kubectl get printed %q, want a header and one row", out)
	}
	header, row := strings.Fields(rows[0]), strings.Fields(rows[1])
	if strings.Join(header, " ") != "NAME READY REASON BACKEND REPLICAS AVAILABLE LISTS LINES ENDPOINT AGE" {
		t.Errorf("kubectl get columns = %v", header)
	}
	if len(row) != 10 || strings.Join(row[:9], " ") != "mixed True Serving memory 1 1 3 3165 "+got.Status.Endpoint {
		t.Errorf("kubectl get row = %v, want mixed True Serving memory 1 1 3 3165 %s <age>", row, got.Status.Endpoint)
	}

	// A claim path that names no file: the pod runs, and the resource says which dataset the
	// server could not load and why, instead of sending the user to the pod's log.
	wrong := newServer(ns, "wrong-path", claimDataset("gone.csv", claim, "nope/gone.csv"))
	create(t, wrong)
	eventually(t, 3*time.Minute, "DatasetsLoaded False naming gone.csv", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(wrong), wrong); err != nil {
			return err
		}
		c := meta.FindStatusCondition(wrong.Status.Conditions, stsv1alpha1.ConditionDatasetsLoaded)
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, `"gone.csv": file not found !`) {
			return fmt.Errorf("conditions %s", conditionSummary(wrong))
		}
		return nil
	})
}

// testReloadPushesAChangedConfigMap: under datasetUpdatePolicy Reload, a changed ConfigMap is
// loaded into the running server through its Service: the list follows, the other list keeps
// what clients did to it, and the pod is the same.
func testReloadPushesAChangedConfigMap(t *testing.T) {
	ns := newNamespace(t, "reload")
	createConfigMap(t, ns, "prices", "prices.csv", testutil.Numbered("old", 10))
	createConfigMap(t, ns, "users", "users.csv", testutil.Numbered("user", 5))
	tableServer := newServer(ns, "reload",
		configMapDataset("prices.csv", "prices", "prices.csv"),
		configMapDataset("users.csv", "users", "users.csv"))
	tableServer.Spec.DatasetUpdatePolicy = stsv1alpha1.DatasetUpdateReload
	create(t, tableServer)
	waitServing(t, tableServer)
	pod := serverPod(t, ns, tableServer.Name)
	if a, err := serverCall(t.Context(), ns, tableServer.Name, "READ", map[string]string{"FILENAME": "users.csv", "KEEP": "FALSE"}); err != nil || !a.OK {
		t.Fatalf("READ KEEP=FALSE: %+v, %v", a, err)
	}

	cm := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "prices"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["prices.csv"] = testutil.File(testutil.Numbered("new", 25))
	if err := k8s.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitListLength(t, tableServer, "prices.csv", 25)
	waitListLength(t, tableServer, "users.csv", 4)
	a, err := serverCall(t.Context(), ns, tableServer.Name, "READ", map[string]string{"FILENAME": "prices.csv", "KEEP": "TRUE"})
	if err != nil || !a.OK || ptr.Deref(a.Value, "") != "new-000000" {
		t.Errorf("READ FIRST of the reloaded list: %q in %+v, %v; want new-000000", ptr.Deref(a.Value, ""), a, err)
	}
	if now := serverPod(t, ns, tableServer.Name); now.UID != pod.UID {
		t.Errorf("the table-server pod was replaced (%s -> %s): a reload must not restart it", pod.Name, now.Name)
	}
}

// testRotatedTokenReachesTheServer: a new token in the Secret reaches the running table server
// through the kubelet's refresh of the mounted copy, with no restart: the new token is accepted
// and the old one refused from then on, a client's consume is kept, and the operator, which
// reads STATUS with the token too, goes on following the lists.
func testRotatedTokenReachesTheServer(t *testing.T) {
	ns := newNamespace(t, "token")
	createConfigMap(t, ns, "users", "users.csv", testutil.Numbered("user", 5))
	createSecret(t, ns, "token", "token", []string{"first"})
	tableServer := newServer(ns, "guarded", configMapDataset("users.csv", "users", "users.csv"))
	tableServer.Spec.Server.AuthTokenSecret = &stsv1alpha1.KeySelector{Name: "token", Key: "token"}
	create(t, tableServer)
	waitServing(t, tableServer)
	pod := serverPod(t, ns, tableServer.Name)
	read := func(token string) (protocol.Answer, error) {
		return serverCall(t.Context(), ns, tableServer.Name, "READ", map[string]string{"FILENAME": "users.csv", "KEEP": "FALSE", "TOKEN": token})
	}
	if a, err := read("first"); err != nil || !a.OK {
		t.Fatalf("READ with the first token: %+v, %v", a, err)
	}

	secret := &corev1.Secret{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "token"}, secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{"token": []byte("second\n")}
	if err := k8s.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, "the server taking the new token", func(ctx context.Context) error {
		a, err := serverCall(ctx, ns, tableServer.Name, "LENGTH", map[string]string{"FILENAME": "users.csv", "TOKEN": "second"})
		if err == nil && !a.OK {
			err = fmt.Errorf("LENGTH with the new token: %s", a.Error)
		}
		return err
	})
	if a, _ := read("first"); a.OK {
		t.Errorf("the old token still reads after the rotation: %+v", a)
	}
	if a, err := read("second"); err != nil || !a.OK {
		t.Errorf("READ with the new token: %+v, %v", a, err)
	}
	waitListLength(t, tableServer, "users.csv", 3)
	if now := serverPod(t, ns, tableServer.Name); now.UID != pod.UID {
		t.Errorf("the table-server pod was replaced (%s -> %s): a new token must not restart it", pod.Name, now.Name)
	}
}

// testResetRestoresTheLists: a new value of the reset-at annotation, set with kubectl annotate
// as a user would between two test runs, reloads every dataset from its source into the running
// server: lists consumed in part, from a ConfigMap and from a claim's file (which only the pod
// can read), are whole again, the pod is the same, and the status records the reset.
func testResetRestoresTheLists(t *testing.T) {
	ns := newNamespace(t, "reset")
	createConfigMap(t, ns, "codes", "codes.csv", testutil.Numbered("code", 20))
	claim := hostPathClaim(t, ns, "reset")
	fillClaim(t, ns, claim, "orders.csv", "order", 30)
	tableServer := newServer(ns, "reset",
		configMapDataset("codes.csv", "codes", "codes.csv"),
		claimDataset("orders.csv", claim, "orders.csv"))
	create(t, tableServer)
	waitServing(t, tableServer)
	pod := serverPod(t, ns, tableServer.Name)
	for list, n := range map[string]int{"codes.csv": 5, "orders.csv": 12} {
		if a, err := serverCall(t.Context(), ns, tableServer.Name, "READMULTI", map[string]string{"FILENAME": list, "NB_LINES": strconv.Itoa(n), "KEEP": "FALSE"}); err != nil || !a.OK {
			t.Fatalf("READMULTI KEEP=FALSE of %s: %+v, %v", list, a, err)
		}
	}
	waitListLength(t, tableServer, "codes.csv", 15)
	waitListLength(t, tableServer, "orders.csv", 18)

	const at = "2026-05-04T10:00:00+00:00"
	if _, errOut, err := kubectl(t, "", "annotate", "-n", ns, "simpletableserver/reset", stsv1alpha1.AnnotationResetAt+"="+at, "--overwrite"); err != nil {
		t.Fatalf("kubectl annotate: %v\n%s", err, errOut)
	}
	waitListLength(t, tableServer, "codes.csv", 20)
	waitListLength(t, tableServer, "orders.csv", 30)
	got := &stsv1alpha1.SimpleTableServer{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(tableServer), got); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, stsv1alpha1.ConditionReset)
	if c == nil || c.Status != metav1.ConditionTrue || got.Status.ObservedResetAt != at || got.Status.LastResetTime == nil {
		t.Errorf("after the reset: Reset %+v, observedResetAt %q, lastResetTime %v", c, got.Status.ObservedResetAt, got.Status.LastResetTime)
	}
	for list, first := range map[string]string{"codes.csv": "code-000000", "orders.csv": "order-000000"} {
		a, err := serverCall(t.Context(), ns, tableServer.Name, "READ", map[string]string{"FILENAME": list, "KEEP": "TRUE"})
		if err != nil || !a.OK || ptr.Deref(a.Value, "") != first {
			t.Errorf("READ FIRST of %s after the reset: %q in %+v, %v; want %s", list, ptr.Deref(a.Value, ""), a, err, first)
		}
	}
	if now := serverPod(t, ns, tableServer.Name); now.UID != pod.UID {
		t.Errorf("the table-server pod was replaced (%s -> %s): a reset must not restart it", pod.Name, now.Name)
	}
}
