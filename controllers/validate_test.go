package controllers

import (
	"strings"
	"testing"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

func TestSpecProblems(t *testing.T) {
	charsets := func(cs stsv1alpha1.Charsets) stsOption { return withServer(stsv1alpha1.ServerOptions{Charsets: cs}) }
	tests := map[string]struct {
		sts *stsv1alpha1.SimpleTableServer
		// want holds a part of each problem, in order.
		want []string
	}{
		"every check passes": {
			sts: newSTS("a", charsets(stsv1alpha1.Charsets{Read: "Cp1252", Write: "latin1", Response: "UTF-8"}),
				withConfigMapDataset("users.csv", "cm", "k"), withClaimDataset("orders", "c", "orders", `orders-\d+\.csv`)),
		},
		"unknown charsets": {
			sts:  newSTS("a", charsets(stsv1alpha1.Charsets{Read: "UTF-9", Response: "EBCDIC-XY"})),
			want: []string{`spec.server.charsets.read: unknown charset "UTF-9"`, `spec.server.charsets.response: unknown charset "EBCDIC-XY"`},
		},
		"a pattern Java refuses": {
			sts:  newSTS("a", withClaimDataset("ok", "c", "d", `.*\.csv`), withClaimDataset("bad", "c", "d", `orders-(\d+.csv`)),
			want: []string{`spec.datasets[1].persistentVolumeClaim.match "orders-(\\d+.csv"`},
		},
		"a Java-only construct is fine": {
			sts: newSTS("a", withClaimDataset("p", "c", "d", `(?<!tmp-)\p{Alpha}+\.csv`)),
		},
		"a name longer than 128 UTF-16 units": {
			sts:  newSTS("a", withConfigMapDataset(strings.Repeat("😀", 65), "cm", "k")),
			want: []string{"spec.datasets[0].name"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := specProblems(tc.sts)
			if len(got) != len(tc.want) {
				t.Fatalf("problems %q, want %d", got, len(tc.want))
			}
			for i, part := range tc.want {
				if !strings.Contains(got[i], part) {
					t.Errorf("problem %q lacks %q", got[i], part)
				}
			}
		})
	}
}
