package testutil

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// SeriesOf returns the values of the counter or gauge series of c whose
// labels include match, keyed by the values of the labels keys joined
// with "/". Unlike WithLabelValues, it creates no series, so that a test
// can see that one is gone.
func SeriesOf(c prometheus.Collector, match map[string]string, keys ...string) map[string]float64 {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if m.Write(&pb) != nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range pb.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !includes(labels, match) {
			continue
		}
		values := make([]string, 0, len(keys))
		for _, k := range keys {
			values = append(values, labels[k])
		}
		out[strings.Join(values, "/")] = pb.GetCounter().GetValue() + pb.GetGauge().GetValue()
	}
	return out
}

// includes tells whether labels include match.
func includes(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// SampleCount returns how many values the histogram h observed.
func SampleCount(h prometheus.Observer) uint64 {
	var m dto.Metric
	if err := h.(prometheus.Metric).Write(&m); err != nil {
		panic(err) // a histogram always writes
	}
	return m.GetHistogram().GetSampleCount()
}
