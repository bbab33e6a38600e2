package controller

import (
	"fmt"
	"time"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
)

// patternCheckTimeout is the match time limit javaregex.Compile requires; checking a pattern
// matches nothing, so any positive value does.
const patternCheckTimeout = time.Second

// specProblems lists what in tableServer's spec (with the operator's defaults) the table server would
// refuse, found with the server's own charset table, file-name rules and regular-expression
// engine, which the API server's schema cannot run, and a Redis backend without a Redis. The server would start without the affected lists or charsets; the
// operator instead holds the Deployment back and says what to fix.
func specProblems(tableServer *stsv1alpha1.SimpleTableServer) []string {
	var problems []string
	cs := tableServer.Spec.Server.Charsets
	for _, c := range []struct{ field, name string }{
		{"spec.server.charsets.read", cs.Read},
		{"spec.server.charsets.write", cs.Write},
		{"spec.server.charsets.response", cs.Response},
	} {
		if c.name == "" {
			continue
		}
		if _, err := datafile.LookupCharset(c.name); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", c.field, err))
		}
	}
	if specs.Shared(tableServer) && !specs.NamesRedis(tableServer) {
		problems = append(problems, "spec.backend.redis names no address or sentinel, and the operator has no default Redis: "+
			"set spec.backend.redis.address (or sentinel), or install the operator with the chart value tableServer.defaultRedis")
	}
	for i, ds := range tableServer.Spec.Datasets {
		if err := datafile.ValidateName(ds.Name); err != nil {
			problems = append(problems, fmt.Sprintf("spec.datasets[%d].name %q: %v", i, ds.Name, err))
		}
		if pvc := ds.PersistentVolumeClaim; pvc != nil && pvc.Match != "" {
			if _, err := javaregex.Compile(pvc.Match, patternCheckTimeout); err != nil {
				problems = append(problems, fmt.Sprintf("spec.datasets[%d].persistentVolumeClaim.match %q: %v", i, pvc.Match, err))
			}
		}
	}
	return problems
}
