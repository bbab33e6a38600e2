package controller

import (
	"reflect"
	"testing"

	"github.com/sts-operator/sts-operator/internal/specs"
)

func TestUpdatedAnnotations(t *testing.T) {
	tests := map[string]struct {
		existing, desired, want map[string]string
	}{
		"a key removed from the spec goes": {
			existing: map[string]string{"lb": "internal", "team": "perf", specs.ManagedAnnotationsAnnotation: "lb,team", "cloud": "x"},
			desired:  map[string]string{"lb": "internal", specs.ManagedAnnotationsAnnotation: "lb"},
			want:     map[string]string{"lb": "internal", specs.ManagedAnnotationsAnnotation: "lb", "cloud": "x"},
		},
		"the last key removed: the record goes too": {
			existing: map[string]string{"lb": "internal", specs.ManagedAnnotationsAnnotation: "lb", "cloud": "x"},
			desired:  map[string]string{},
			want:     map[string]string{"cloud": "x"},
		},
		"values change, others' keys stay": {
			existing: map[string]string{"lb": "internal", specs.ManagedAnnotationsAnnotation: "lb", "cloud": "x"},
			desired:  map[string]string{"lb": "public", "new": "1", specs.ManagedAnnotationsAnnotation: "lb,new"},
			want:     map[string]string{"lb": "public", "new": "1", specs.ManagedAnnotationsAnnotation: "lb,new", "cloud": "x"},
		},
		"no record (an older operator): nothing removed": {
			existing: map[string]string{"lb": "internal", "cloud": "x"},
			desired:  map[string]string{},
			want:     map[string]string{"lb": "internal", "cloud": "x"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := updatedAnnotations(tc.existing, tc.desired); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("annotations %v, want %v", got, tc.want)
			}
		})
	}
}
