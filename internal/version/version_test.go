package version

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCollectorExportsBuildInfo(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "sts_build_info" || len(families[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, want one sts_build_info series", families)
	}
	m := families[0].GetMetric()[0]
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	want := map[string]string{"version": Version, "revision": BuildRevision(), "goversion": runtime.Version()}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) || m.GetGauge().GetValue() != 1 {
		t.Errorf("sts_build_info = %v, want 1 with the labels %v", m, want)
	}
}

func TestBuildRevision(t *testing.T) {
	if got := BuildRevision(); got == "" {
		t.Fatal("BuildRevision is empty, want a revision or unknown")
	}
	defer func(old string) { Revision = old }(Revision)
	Revision = "abc123"
	if got := BuildRevision(); got != "abc123" {
		t.Fatalf("BuildRevision = %q with Revision set by -X, want abc123", got)
	}
}
