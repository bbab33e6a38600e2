package controllers

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
)

// observed builds an observation for computeStatus tests.
type observed func(*observation)

func observe(opts ...observed) observation {
	o := observation{sources: &sources{hashes: map[string]string{}, content: map[string][]byte{}}}
	for _, f := range opts {
		f(&o)
	}
	return o
}

func sourceMissing(what string) observed {
	return func(o *observation) { o.sources.missing = append(o.sources.missing, what) }
}

// deployed: a Deployment exists that loaded the given dataset hashes; available says whether
// its pod is available.
func deployed(available bool, loaded map[string]string) observed {
	return func(o *observation) {
		d := &appsv1.Deployment{}
		d.Generation = 1
		d.Annotations = map[string]string{loadedDatasetsAnnotation: encodeHashes(loaded)}
		if available {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
		}
		o.deployment = d
	}
}

func sourceHash(dataset, hash string) observed {
	return func(o *observation) { o.sources.hashes[dataset] = hash }
}

func answered(lists ...stsv1alpha1.ListStatus) observed {
	return func(o *observation) {
		s := &serverStatus{OK: true, Lists: lists}
		for _, l := range lists {
			s.Total += l.Length
		}
		o.server.status = s
	}
}

func noAnswer(o *observation) { o.server.err = errors.New("connection refused") }

func TestComputeStatusConditions(t *testing.T) {
	sts := newSTS("a", withConfigMapDataset("users", "logins", "users"), withClaimDataset("csvs", "d", "dir", ".*"))
	sts.Generation = 3
	users := stsv1alpha1.ListStatus{Name: "users", Length: 5}
	// want: Ready, DatasetsLoaded, Progressing, Degraded as "Status/Reason".
	tests := map[string]struct {
		obs  observation
		want [4]string
	}{
		"source missing, nothing deployed": {
			observe(sourceMissing(`ConfigMap "logins"`)),
			[4]string{"False/SourceMissing", "False/SourceMissing", "False/SourceMissing", "True/SourceMissing"},
		},
		"pod starting": {
			observe(deployed(false, nil), noAnswer),
			[4]string{"False/Starting", "Unknown/Starting", "True/Deploying", "False/Healthy"},
		},
		"available but unreachable": {
			observe(deployed(true, nil), noAnswer),
			[4]string{"False/Unreachable", "Unknown/Unreachable", "False/Deployed", "True/Unreachable"},
		},
		"serving every dataset": {
			observe(sourceHash("users", "h1"), deployed(true, map[string]string{"users": "h1"}), answered(users)),
			[4]string{"True/Serving", "True/Loaded", "False/Deployed", "False/Healthy"},
		},
		"serving, a source changed since loading (Keep)": {
			observe(sourceHash("users", "h2"), deployed(true, map[string]string{"users": "h1"}), answered(users)),
			[4]string{"True/Serving", "True/SourceChanged", "False/Deployed", "False/Healthy"},
		},
		"serving without a dataset's list": {
			observe(deployed(true, nil), answered(stsv1alpha1.ListStatus{Name: "other", Length: 1})),
			[4]string{"True/Serving", "False/NotLoaded", "False/Deployed", "True/NotLoaded"},
		},
		"serving, reload refused": {
			observe(deployed(true, nil), answered(users), func(o *observation) { o.server.reloadErr = errors.New("LOAD: HTTP 413") }),
			[4]string{"True/Serving", "False/ReloadFailed", "False/Deployed", "True/ReloadFailed"},
		},
		"serving, source deleted later": {
			observe(sourceMissing(`ConfigMap "logins"`), deployed(true, nil), answered(users)),
			[4]string{"True/Serving", "False/SourceMissing", "False/Deployed", "True/SourceMissing"},
		},
		"apply refused": {
			observe(func(o *observation) { o.applyErr = errors.New("Deployment invalid") }),
			[4]string{"False/ApplyFailed", "Unknown/ApplyFailed", "False/ApplyFailed", "True/ApplyFailed"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := computeStatus(sts, tc.obs, metav1.Now())
			for i, typ := range []string{stsv1alpha1.ConditionReady, stsv1alpha1.ConditionDatasetsLoaded, stsv1alpha1.ConditionProgressing, stsv1alpha1.ConditionDegraded} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil {
					t.Fatalf("no %s condition", typ)
				}
				if got := string(c.Status) + "/" + c.Reason; got != tc.want[i] {
					t.Errorf("%s = %s (%s), want %s", typ, got, c.Message, tc.want[i])
				}
				if c.ObservedGeneration != 3 || c.Message == "" {
					t.Errorf("%s: observedGeneration %d, message %q", typ, c.ObservedGeneration, c.Message)
				}
			}
			if st.ObservedGeneration != 3 || st.Endpoint != "http://a.default.svc:9191" {
				t.Errorf("observedGeneration %d endpoint %q", st.ObservedGeneration, st.Endpoint)
			}
		})
	}
}

func TestComputeStatusChangesOnlyWithTheServer(t *testing.T) {
	sts := newSTS("a", withConfigMapDataset("users", "logins", "users"))
	obs := observe(sourceHash("users", "h"), deployed(true, map[string]string{"users": "h"}),
		answered(stsv1alpha1.ListStatus{Name: "users", Length: 5}))
	t0 := metav1.NewTime(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	sts.Status = computeStatus(sts, obs, t0)
	if sts.Status.TotalLines != 5 || sts.Status.ListCount != 1 || !sts.Status.LastStatusTime.Equal(&t0) {
		t.Fatalf("first reading: %+v", sts.Status)
	}

	later := metav1.NewTime(t0.Add(time.Minute))
	same := computeStatus(sts, obs, later)
	if !apiequality.Semantic.DeepEqual(sts.Status, same) {
		t.Errorf("an identical reading changed the status:\n%+v\n%+v", sts.Status, same)
	}

	read := observe(sourceHash("users", "h"), deployed(true, map[string]string{"users": "h"}),
		answered(stsv1alpha1.ListStatus{Name: "users", Length: 4}))
	next := computeStatus(sts, read, later)
	if next.TotalLines != 4 || !next.LastStatusTime.Equal(&later) {
		t.Errorf("after a READ: total %d at %v", next.TotalLines, next.LastStatusTime)
	}
	if c := meta.FindStatusCondition(next.Conditions, stsv1alpha1.ConditionReady); !c.LastTransitionTime.Equal(&t0) {
		t.Errorf("Ready's lastTransitionTime moved to %v without a transition", c.LastTransitionTime)
	}

	gone := computeStatus(sts, observe(sourceHash("users", "h"), deployed(true, nil), noAnswer), later)
	if gone.TotalLines != 5 || !gone.LastStatusTime.Equal(&t0) {
		t.Errorf("an unanswered poll dropped the last reading: %+v", gone)
	}
}

func TestStatusListsAreBounded(t *testing.T) {
	var lists []stsv1alpha1.ListStatus
	for i := range maxStatusLists + 10 {
		lists = append(lists, stsv1alpha1.ListStatus{Name: string(rune('a' + i%26)), Length: 1})
	}
	st := computeStatus(newSTS("a"), observe(deployed(true, nil), answered(lists...)), metav1.Now())
	if len(st.Lists) != maxStatusLists || st.ListCount != int32(maxStatusLists+10) || st.TotalLines != int64(maxStatusLists+10) {
		t.Errorf("%d lists in status, listCount %d, total %d", len(st.Lists), st.ListCount, st.TotalLines)
	}
}
