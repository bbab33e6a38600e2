//go:build e2e

package e2e

import "testing"

// TestE2E runs the workload tests side by side, each in its own namespace, then the Helm
// lifecycle in order: the upgrade needs the installed operator, and the uninstall removes it.
// `go test -tags e2e -run 'TestE2E/Workloads/Queue'` runs one of them.
func TestE2E(t *testing.T) {
	t.Run("Workloads", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			test func(*testing.T)
		}{
			{"Datasets", testDatasets},
			{"ReloadPushesAChangedConfigMap", testReloadPushesAChangedConfigMap},
			{"ResetRestoresTheLists", testResetRestoresTheLists},
			{"RotatedTokenReachesTheServer", testRotatedTokenReachesTheServer},
			{"ConsumeOnce", testConsumeOnce},
			{"Queue", testQueue},
			{"RestartKeepsConsumption", testRestartKeepsConsumption},
			{"InvalidResourceRefused", testInvalidResourceRefused},
			{"MissingConfigMapHeals", testMissingConfigMapHeals},
			{"DeleteRemovesChildren", testDeleteRemovesChildren},
			{"RedisBackend", testRedisBackend},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.test(t)
			})
		}
	})
	t.Run("HelmUpgradeKeepsResources", testHelmUpgradeKeepsResources)
	t.Run("HelmUninstallLeavesNothing", testHelmUninstallLeavesNothing)
}
