package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

func TestFormatRate(t *testing.T) {
	for rate, want := range map[float64]string{
		1234.5: "1230", 12.345: "12.3", 1: "1", 0.012345: "0.0123", 0.1: "0.1", 99.96: "100", 2.5: "2.5",
	} {
		if got := formatRate(rate); got != want {
			t.Errorf("formatRate(%v) = %q, want %q", rate, got, want)
		}
	}
}

func TestWithConsumption(t *testing.T) {
	now := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	stored := &stsv1alpha1.ListStatus{Name: "l", Length: 1000, ConsumptionRate: "10", EstimatedEmptyTime: at(100 * time.Second)}
	const step = 10 * time.Second
	for _, tc := range []struct {
		name     string
		length   int64
		before   *stsv1alpha1.ListStatus
		rate     float64
		measured bool
		want     string
		wantAt   *metav1.Time
	}{
		{"first reading of a new list", 1000, nil, 0, false, "", nil},
		{"no reading keeps what the status says", 900, stored, 0, false, "10", at(100 * time.Second)},
		{"a steady list has none", 1000, nil, 0, true, "", nil},
		{"a steady list loses them", 1000, stored, 0, true, "", nil},
		{"a growing list has none", 1000, stored, -5, true, "", nil},
		{"an empty list has none", 0, stored, 10, true, "", nil},
		{"a shrinking list gets them", 500, nil, 12.34, true, "12.3", at(40 * time.Second)},
		{"within a fifth, both kept", 1050, stored, 11.5, true, "10", at(100 * time.Second)},
		{"rate up by more than a fifth", 1000, stored, 12.5, true, "12.5", at(80 * time.Second)},
		{"rate down by more than a fifth", 1000, stored, 7.9, true, "7.9", at(126 * time.Second)},
		{"empty time off by more than a fifth of the time left", 1500, stored, 10, true, "10", at(150 * time.Second)},
		{"near the end, the step bounds the noise", 45, &stsv1alpha1.ListStatus{ConsumptionRate: "10", EstimatedEmptyTime: at(12 * time.Second)},
			9, true, "10", at(12 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withConsumption(stsv1alpha1.ListStatus{Name: "l", Length: tc.length}, tc.before, tc.rate, tc.measured, now, step)
			if got.ConsumptionRate != tc.want || !got.EstimatedEmptyTime.Equal(tc.wantAt) {
				t.Errorf("rate %q empty at %v, want %q at %v", got.ConsumptionRate, got.EstimatedEmptyTime, tc.want, tc.wantAt)
			}
		})
	}
}

func TestReadingsMeasure(t *testing.T) {
	tableServer := &stsv1alpha1.SimpleTableServer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t", UID: "u1"}}
	status := func(lengths ...int64) *protocol.Answer {
		var a protocol.Answer
		for i, n := range lengths {
			a.Lists = append(a.Lists, protocol.List{Name: strconv.Itoa(i), Length: n})
		}
		return &a
	}
	rd := newReadings()
	now := time.Now()
	if c := rd.measure(tableServer, status(100, 5, 7), now); c.rates != nil || c.exhausted != nil {
		t.Errorf("first reading: %+v, want nothing to compare with", c)
	}
	c := rd.measure(tableServer, status(80, 0, 9, 4), now.Add(10*time.Second))
	if want := map[string]float64{"0": 2, "1": 0.5, "2": -0.2}; !mapsEqual(c.rates, want) || !slices.Equal(c.exhausted, []string{"1"}) {
		t.Errorf("second reading: %+v, want rates %v and list 1 exhausted", c, want)
	}
	if c := rd.measure(tableServer, status(70, 0, 9, 4), now.Add(10*time.Second+time.Millisecond)); c.rates != nil || c.exhausted != nil {
		t.Errorf("a reading a millisecond later: %+v, want no rate and no list exhausted again", c)
	}
	again := tableServer.DeepCopy()
	again.UID = "u2"
	if c := rd.measure(again, status(1, 0), now.Add(time.Minute)); c.rates != nil {
		t.Errorf("a resource created again under the name: %+v, want a fresh start", c)
	}
	rd.forget(types.NamespacedName{Namespace: "ns", Name: "t"})
	if len(rd.last) != 0 {
		t.Errorf("forget left %d readings", len(rd.last))
	}
}

func mapsEqual(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || fmt.Sprintf("%.6f", v) != fmt.Sprintf("%.6f", w) {
			return false
		}
	}
	return true
}

// A list consumed at a steady pace shows its rate and when it will be empty; once consumption
// stops the figures go, and a steady list then costs no write. A list consumed to its last line
// is a Warning ListExhausted.
func TestConsumptionRateTimeToEmptyAndExhaustion(t *testing.T) {
	s := requireEnvtest(t)
	tableServer, ts := s.servedTableServer(t, "", map[string]string{"users": "u1\n"})
	const lines = 100000
	many := make([]string, lines)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	if err := ts.store.Replace(context.Background(), "orders", many, ""); err != nil {
		t.Fatal(err)
	}
	if err := ts.store.Replace(context.Background(), "few", []string{"f1", "f2", "f3"}, ""); err != nil {
		t.Fatal(err)
	}

	// Steady: once the status shows the lists, nothing is written.
	cur := tableServer.DeepCopy()
	eventually(t, reconcileWait, func() error {
		s.get(t, cur)
		if listLength(cur, "orders") != lines {
			return fmt.Errorf("status.lists %+v", cur.Status.Lists)
		}
		return nil
	})
	// A reconcile has ended when the next one asks for STATUS: two polls, and the one that
	// showed the lists has written what it had to.
	ts.waitPolls(t, 2)
	writes := s.writes.in(tableServer.Namespace)
	ts.waitPolls(t, 3)
	if w := s.writes.in(tableServer.Namespace) - writes; w != 0 {
		t.Errorf("%d writes in three polls of steady lists", w)
	}

	// About 200 lines a second: fewer on a loaded machine, whose ticker skips ticks, so the
	// rate shown is compared with the pace the reader kept.
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	var consumed atomic.Int64
	began := time.Now()
	go func() {
		defer close(done)
		for tick := time.NewTicker(10 * time.Millisecond); ctx.Err() == nil; <-tick.C {
			if lines, err := ts.store.Read(context.Background(), "orders", store.First, 2, false, 0); err == nil {
				consumed.Add(int64(len(lines)))
			}
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	eventually(t, reconcileWait, func() error {
		s.get(t, cur)
		l := findList(cur.Status.Lists, "orders")
		pace := float64(consumed.Load()) / time.Since(began).Seconds()
		rate, err := strconv.ParseFloat(l.ConsumptionRate, 64)
		if err != nil || rate < pace/2 || rate > pace*2 || l.EstimatedEmptyTime == nil {
			return fmt.Errorf("orders: %+v, want the reader's %.0f lines/s within a factor of 2, and an empty time", l, pace)
		}
		want := time.Duration(float64(l.Length) / pace * float64(time.Second))
		if left := time.Until(l.EstimatedEmptyTime.Time); left < want/2 || left > want*2 {
			return fmt.Errorf("orders would be empty in %v, want about %v", left, want)
		}
		return nil
	})
	if l := findList(cur.Status.Lists, "few"); l.ConsumptionRate != "" || l.EstimatedEmptyTime != nil {
		t.Errorf("an untouched list has consumption figures: %+v", l)
	}
	stop()
	<-done
	eventually(t, reconcileWait, func() error {
		s.get(t, cur)
		if l := findList(cur.Status.Lists, "orders"); l.ConsumptionRate != "" || l.EstimatedEmptyTime != nil {
			return fmt.Errorf("orders no longer consumed: %+v", l)
		}
		return nil
	})

	if _, err := ts.store.Read(context.Background(), "few", store.First, 3, false, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, reconcileWait, func() error {
		return s.findEventNote(tableServer, corev1.EventTypeWarning, "ListExhausted", `"few"`)
	})
	count := func() (n int) {
		_ = s.forEachEvent(tableServer, func(_, reason, _ string) {
			if reason == "ListExhausted" {
				n++
			}
		})
		return n
	}
	ts.waitPolls(t, 2)
	if n := count(); n != 1 {
		t.Errorf("%d ListExhausted events, want one for the list that reached 0", n)
	}
}
