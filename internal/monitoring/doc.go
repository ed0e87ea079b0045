// Package monitoring is what Windlass gives Prometheus and Grafana: the
// dashboard (built in Go with the Grafana Foundation SDK), the alert rules
// with their runbooks, and the objects that install them with the
// Prometheus Operator (a PodMonitor, a PrometheusRule, and the dashboard in
// a ConfigMap that Grafana's sidecar loads), or the plain files for a
// Prometheus without the operator. The queries read the series that
// package metrics exports.
package monitoring
