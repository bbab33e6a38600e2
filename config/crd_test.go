package config

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
)

// TestKubectlNamesOfTheCRD asks the API server's discovery, which kubectl reads, for the names of
// SimpleTableServer: its short name and its category resolve to it, and neither takes a name of
// another resource the server serves. kubectl expands a category before it looks a name up
// (cli-runtime's Builder.ReplaceAliases), so a category "sts" would turn `kubectl get sts` from
// StatefulSets into SimpleTableServers on every cluster that installs the CRD.
func TestKubectlNamesOfTheCRD(t *testing.T) {
	cfg := startAPIServer(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	var ours *metav1.APIResource
	others := map[string]string{} // a name kubectl resolves -> the resource it belongs to
	for _, list := range lists {
		for i, r := range list.APIResources {
			if list.GroupVersion == "sts.tableserver.dev/v1alpha1" && r.Name == "simpletableservers" {
				ours = &list.APIResources[i]
				continue
			}
			for _, name := range append([]string{r.Name, r.SingularName}, r.ShortNames...) {
				others[name] = r.Name + " (" + list.GroupVersion + ")"
			}
		}
	}
	if ours == nil {
		t.Fatal("discovery does not list simpletableservers in sts.tableserver.dev/v1alpha1")
	}
	if !slices.Equal(ours.ShortNames, []string{"stserver"}) {
		t.Errorf("short names = %v, want [stserver]", ours.ShortNames)
	}
	if !slices.Equal(ours.Categories, []string{"loadtest"}) {
		t.Errorf("categories = %v, want [loadtest]", ours.Categories)
	}
	for _, name := range append(slices.Clone(ours.ShortNames), ours.Categories...) {
		if other, taken := others[name]; taken {
			t.Errorf("%q, a name of SimpleTableServer, is also a name of %s", name, other)
		}
	}
	if other, taken := others["sts"]; !taken || other != "statefulsets (apps/v1)" {
		t.Errorf("sts resolves to %q; the check above relies on discovery listing StatefulSet's short name", other)
	}

	expander := restmapper.NewDiscoveryCategoryExpander(dc)
	resources, ok := expander.Expand("loadtest")
	if !ok || len(resources) != 1 || resources[0].Resource != "simpletableservers" || resources[0].Group != "sts.tableserver.dev" {
		t.Errorf("`kubectl get loadtest` expands to %v (%t), want simpletableservers.sts.tableserver.dev", resources, ok)
	}
	if resources, ok := expander.Expand("sts"); ok {
		t.Errorf("`kubectl get sts` expands to the category %v, want StatefulSets", resources)
	}
}
