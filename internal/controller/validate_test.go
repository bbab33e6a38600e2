package controller

import (
	"strings"
	"testing"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

func TestSpecProblems(t *testing.T) {
	charsets := func(cs stsv1alpha1.Charsets) specstest.Option {
		return specstest.WithServer(stsv1alpha1.ServerOptions{Charsets: cs})
	}
	tests := map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		// want holds a part of each problem, in order.
		want []string
	}{
		"every check passes": {
			tableServer: specstest.New("a", charsets(stsv1alpha1.Charsets{Read: "Cp1252", Write: "latin1", Response: "UTF-8"}),
				specstest.WithConfigMapDataset("users.csv", "cm", "k"), specstest.WithClaimDataset("orders", "c", "orders", `orders-\d+\.csv`)),
		},
		"unknown charsets": {
			tableServer: specstest.New("a", charsets(stsv1alpha1.Charsets{Read: "UTF-9", Response: "EBCDIC-XY"})),
			want:        []string{`spec.server.charsets.read: unknown charset "UTF-9"`, `spec.server.charsets.response: unknown charset "EBCDIC-XY"`},
		},
		"a pattern Java refuses": {
			tableServer: specstest.New("a", specstest.WithClaimDataset("ok", "c", "d", `.*\.csv`), specstest.WithClaimDataset("bad", "c", "d", `orders-(\d+.csv`)),
			want:        []string{`spec.datasets[1].persistentVolumeClaim.match "orders-(\\d+.csv"`},
		},
		"a Java-only construct is fine": {
			tableServer: specstest.New("a", specstest.WithClaimDataset("p", "c", "d", `(?<!tmp-)\p{Alpha}+\.csv`)),
		},
		"a name longer than 128 UTF-16 units": {
			tableServer: specstest.New("a", specstest.WithConfigMapDataset(strings.Repeat("😀", 65), "cm", "k")),
			want:        []string{"spec.datasets[0].name"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := specProblems(tc.tableServer)
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
