package controller

import (
	"math"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// Consumption rates come from two successive readings of STATUS, which the operator makes
// anyway every statusRefreshInterval: no extra call, and nothing kept in the status but the
// figures. A reading lives in the operator's memory only; after a restart the first poll has
// nothing to compare with and leaves the figures as they are.

// minReadingGap is the shortest time between two readings that gives a rate: a reconcile that
// an event starts right after a poll would otherwise divide a line or two by a few milliseconds.
const minReadingGap = time.Second

// rateStep is how much a rate, or the time left before a list is empty, must move before the
// status is rewritten: a fifth, so that the noise of a steady consumption costs no writes.
const rateStep = 0.2

// consumption is what one reading of STATUS says about how the lists are consumed.
type consumption struct {
	// rates are the lines a second each shown list lost since the previous reading (negative:
	// it grew); nil when there was no previous reading, or one too recent to say.
	rates map[string]float64
	// exhausted are the lists that had lines at the previous reading and have none now.
	exhausted []string
}

// readings keeps, per resource, the operator's last reading of its lists' lengths.
type readings struct {
	mu   sync.Mutex
	last map[types.NamespacedName]reading
}

type reading struct {
	uid     types.UID
	at      time.Time
	lengths map[string]int64
}

func newReadings() *readings { return &readings{last: map[types.NamespacedName]reading{}} }

// measure records the lengths status reports as tableServer's reading at now, and returns what they say
// against the previous reading of the same resource (its UID: a resource created again under
// the same name starts over).
func (rd *readings) measure(tableServer *stsv1alpha1.SimpleTableServer, status *protocol.Answer, now time.Time) consumption {
	key := client.ObjectKeyFromObject(tableServer)
	next := reading{uid: tableServer.UID, at: now, lengths: map[string]int64{}}
	for _, l := range shownLists(status) {
		next.lengths[l.Name] = l.Length
	}
	rd.mu.Lock()
	prev, known := rd.last[key]
	rd.last[key] = next
	rd.mu.Unlock()
	var c consumption
	if !known || prev.uid != tableServer.UID {
		return c
	}
	gap := now.Sub(prev.at)
	if gap >= minReadingGap {
		c.rates = make(map[string]float64, len(next.lengths))
	}
	for name, length := range next.lengths {
		before, had := prev.lengths[name]
		if !had {
			continue
		}
		if c.rates != nil {
			c.rates[name] = float64(before-length) / gap.Seconds()
		}
		if before > 0 && length == 0 {
			c.exhausted = append(c.exhausted, name)
		}
	}
	return c
}

// forget drops a deleted resource's reading.
func (rd *readings) forget(key types.NamespacedName) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	delete(rd.last, key)
}

// measureConsumption reads how tableServer's lists are consumed from the server's STATUS of this
// reconcile, and records a Warning ListExhausted for each list that was consumed to its last
// line since the previous poll: the event a test run that ran out of data wants to be told.
func (r *SimpleTableServerReconciler) measureConsumption(tableServer *stsv1alpha1.SimpleTableServer, status *protocol.Answer) consumption {
	if status == nil {
		return consumption{}
	}
	c := r.readings.measure(tableServer, status, time.Now())
	for _, name := range c.exhausted {
		r.Recorder.Eventf(tableServer, nil, corev1.EventTypeWarning, "ListExhausted", "Consume",
			"List %q is empty: its lines were consumed since the previous reading", name)
	}
	return c
}

// withConsumption sets l's consumption rate and estimated empty time from rate (lines a second
// it lost; measured false: unknown), keeping those of before (l as the status has it, nil for
// a new list) while they are within rateStep of the new ones. A list that does not shrink, or
// has no line left, has neither. step is the smallest move of the empty time worth a write.
func withConsumption(l stsv1alpha1.ListStatus, before *stsv1alpha1.ListStatus, rate float64, measured bool, now time.Time, step time.Duration) stsv1alpha1.ListStatus {
	switch {
	case !measured:
		if before != nil {
			l.ConsumptionRate, l.EstimatedEmptyTime = before.ConsumptionRate, before.EstimatedEmptyTime
		}
		return l
	case rate <= 0 || l.Length == 0:
		return l
	}
	empty := now.Add(time.Duration(float64(l.Length) / rate * float64(time.Second))).Truncate(time.Second)
	if before != nil && before.EstimatedEmptyTime != nil {
		stored, err := strconv.ParseFloat(before.ConsumptionRate, 64)
		left := max(time.Duration(rateStep*float64(empty.Sub(now))), step)
		if err == nil && math.Abs(rate-stored) <= rateStep*stored && absDuration(empty.Sub(before.EstimatedEmptyTime.Time)) <= left {
			l.ConsumptionRate, l.EstimatedEmptyTime = before.ConsumptionRate, before.EstimatedEmptyTime
			return l
		}
	}
	l.ConsumptionRate = formatRate(rate)
	l.EstimatedEmptyTime = &metav1.Time{Time: empty}
	return l
}

// formatRate writes a positive rate with three significant digits, without an exponent:
// 1234.5 is "1230", 0.012345 is "0.0123".
func formatRate(rate float64) string {
	scale := math.Pow(10, 2-math.Floor(math.Log10(rate)))
	return strconv.FormatFloat(math.Round(rate*scale)/scale, 'f', -1, 64)
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
