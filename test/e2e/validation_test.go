//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// testInvalidResourceRefused: kubectl apply of an invalid resource fails with the message that
// says what to fix, and nothing is created.
func testInvalidResourceRefused(t *testing.T) {
	ns := newNamespace(t, "invalid")
	for _, tc := range []struct{ name, spec, message string }{
		{"two sources", "datasets: [{name: a.csv, configMap: {name: a, key: a.csv}, secret: {name: a, key: a.csv}}]",
			"set exactly one source per dataset: configMap, secret or persistentVolumeClaim"},
		{"a slash in a dataset name", `datasets: [{name: "dir/a.csv", configMap: {name: a, key: a.csv}}]`,
			"dataset name must not contain '/'"},
		{"a refresh interval below 1s", "statusRefreshInterval: 10ms",
			"statusRefreshInterval must be between 1s and 1h"},
	} {
		manifest := fmt.Sprintf("apiVersion: sts.tableserver.dev/v1alpha1\nkind: SimpleTableServer\nmetadata: {name: bad, namespace: %s}\nspec:\n  %s\n", ns, tc.spec)
		_, errOut, err := kubectl(t, manifest, "apply", "-f", "-")
		if err == nil {
			t.Errorf("%s: kubectl apply accepted the resource", tc.name)
		} else if !strings.Contains(errOut, tc.message) {
			t.Errorf("%s: kubectl apply said %q, want the message %q", tc.name, strings.TrimSpace(errOut), tc.message)
		}
	}
	var list stsv1alpha1.SimpleTableServerList
	if err := k8s.List(t.Context(), &list, client.InNamespace(ns)); err != nil || len(list.Items) != 0 {
		t.Errorf("after the refused applies the namespace holds %d resources (%v), want none", len(list.Items), err)
	}
}

// testMissingConfigMapHeals: a dataset whose ConfigMap does not exist shows in the conditions,
// and the resource becomes Ready with the list once the ConfigMap is created.
func testMissingConfigMapHeals(t *testing.T) {
	ns := newNamespace(t, "missing")
	tableServer := newServer(ns, "late", configMapDataset("late.csv", "late-data", "late.csv"))
	create(t, tableServer)
	eventually(t, time.Minute, "Ready=False naming the missing ConfigMap", func(ctx context.Context) error {
		got := &stsv1alpha1.SimpleTableServer{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(tableServer), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, stsv1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != stsv1alpha1.ReasonSourceMissing || !strings.Contains(c.Message, "late-data") {
			return fmt.Errorf("conditions %s", conditionSummary(got))
		}
		return nil
	})
	createConfigMap(t, ns, "late-data", "late.csv", testutil.Numbered("late", 30))
	waitServing(t, tableServer)
	waitListLength(t, tableServer, "late.csv", 30)
}
