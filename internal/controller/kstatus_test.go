package controller

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// TestKstatusReadsTheStatusAsFluxDoes runs kstatus (what Flux's health checks, kpt and
// cli-utils use) on the resource as the API server serves it while the operator drives it:
// InProgress while the pod rolls out, Current once Ready, still Current when a source drifts
// under the Keep policy, Failed once a source is deleted.
func TestKstatusReadsTheStatusAsFluxDoes(t *testing.T) {
	s := requireEnvtest(t)
	ns := s.newNamespace(t)
	s.create(t, configMap(ns, "users", map[string]string{"lines": "u1\nu2\n"}))
	ts := startTableServer(t, "", map[string][]string{"users": {"u1", "u2"}})
	s.endpoints.set(t, ns+"/tables", ts.url)
	tableServer := specstest.New("tables", specstest.InNamespace(ns), specstest.WithConfigMapDataset("users", "users", "lines"))
	tableServer.UID = ""
	s.create(t, tableServer)

	waitForKstatus := func(want kstatus.Status) *stsv1alpha1.SimpleTableServer {
		t.Helper()
		cur := tableServer.DeepCopy()
		eventually(t, reconcileWait, func() error {
			s.get(t, cur)
			if res := computeKstatus(t, cur); res.Status != want {
				return fmt.Errorf("kstatus %s (%s), want %s; conditions %+v", res.Status, res.Message, want, cur.Status.Conditions)
			}
			return nil
		})
		return cur
	}

	// No Deployment controller has reported yet: the operator is converging.
	cur := waitForKstatus(kstatus.InProgressStatus)
	s.waitForCondition(t, cur, stsv1alpha1.ConditionReconciling, metav1.ConditionTrue, stsv1alpha1.ReasonRollingOut, reconcileWait)

	s.rollouts.in(t, ns)
	cur = waitForKstatus(kstatus.CurrentStatus)
	s.waitForCondition(t, cur, stsv1alpha1.ConditionReady, metav1.ConditionTrue, stsv1alpha1.ReasonServing, reconcileWait)

	s.updateConfigMap(t, ns, "users", "new\n")
	cur = s.waitForCondition(t, tableServer, stsv1alpha1.ConditionDatasetsInSync, metav1.ConditionFalse, stsv1alpha1.ReasonSourceChanged, reconcileWait)
	if res := computeKstatus(t, cur); res.Status != kstatus.CurrentStatus {
		t.Errorf("kstatus %s (%s) under drift, want Current", res.Status, res.Message)
	}

	if err := s.k8s.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "users"}}); err != nil {
		t.Fatal(err)
	}
	cur = waitForKstatus(kstatus.FailedStatus)
	s.waitForCondition(t, cur, stsv1alpha1.ConditionStalled, metav1.ConditionTrue, stsv1alpha1.ReasonSourceMissing, reconcileWait)
}
