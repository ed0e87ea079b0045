package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// GateOpen is windlass_gate_open: 1 while a gate is open, 0 while closed.
var GateOpen = prometheus.NewGaugeVec(
	prometheus.GaugeOpts{
		Name: "windlass_gate_open",
		Help: "Whether a Gate is open (1) or closed (0).",
	},
	[]string{nameLabel, namespaceLabel},
)

func init() {
	crmetrics.Registry.MustRegister(GateOpen)
}

// RecordGate records whether the gate namespace/name is open.
func RecordGate(namespace, name string, open bool) {
	v := 0.0
	if open {
		v = 1
	}
	GateOpen.WithLabelValues(name, namespace).Set(v)
}

// ForgetGate drops the series of a deleted gate.
func ForgetGate(namespace, name string) {
	GateOpen.DeleteLabelValues(name, namespace)
}
