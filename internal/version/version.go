// Package version holds the build version stamped into both binaries by the Makefile, and the
// sts_build_info metric both export.
package version

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Version is set at link time with -X; "dev" for plain go builds.
var Version = "dev"

// Revision is the source revision: set at link time with -X, else the VCS revision Go stamps
// into a build from a git checkout (with a "-dirty" suffix for uncommitted changes), else
// "unknown".
var Revision = ""

// BuildRevision returns Revision, or the VCS revision of the build, or "unknown".
func BuildRevision() string {
	if Revision != "" {
		return Revision
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision == "" {
		return "unknown"
	}
	if modified == "true" {
		revision += "-dirty"
	}
	return revision
}

// Collector returns the gauge sts_build_info{version,revision,goversion}, always 1, which the
// table server and the operator both export: dashboards and alerts join on it to show what
// runs.
func Collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sts_build_info",
		Help: "Always 1; the labels say which build runs: version, source revision, Go version.",
		ConstLabels: prometheus.Labels{
			"version":   Version,
			"revision":  BuildRevision(),
			"goversion": runtime.Version(),
		},
	}, func() float64 { return 1 })
}
