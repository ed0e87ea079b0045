package monitoring

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The Prometheus Operator's API.
const (
	// OperatorAPIVersion is the group and version of its kinds.
	OperatorAPIVersion = "monitoring.coreos.com/v1"
	// PodMonitorKind scrapes pods; PrometheusRuleKind holds rules.
	PodMonitorKind     = "PodMonitor"
	PrometheusRuleKind = "PrometheusRule"
)

// Names of the monitoring objects and what they select.
const (
	// Name names the PodMonitor, the PrometheusRule and the dashboard's
	// ConfigMap.
	Name = "windlass"
	// PodLabel and PodLabelValue select the controllers' pods.
	PodLabel      = "app.kubernetes.io/part-of"
	PodLabelValue = "windlass"
	// MetricsPort names the container port of the metrics.
	MetricsPort = "http-prom"
	// DashboardLabel is the label by which Grafana's sidecar finds
	// dashboards in ConfigMaps, and DashboardFile the ConfigMap's key.
	DashboardLabel = "grafana_dashboard"
	DashboardFile  = "windlass.json"
)

// Objects returns the objects that monitor an installation in namespace
// with the Prometheus Operator and Grafana's dashboard sidecar: the
// PodMonitor of the controllers' pods, the PrometheusRule of the alerts
// (thresholds of o) and the dashboard's ConfigMap.
func Objects(namespace string, o RuleOptions) ([]*unstructured.Unstructured, error) {
	dashboard, err := Dashboard()
	if err != nil {
		return nil, err
	}
	groups, err := toUnstructured(RuleGroups(o))
	if err != nil {
		return nil, err
	}
	podMonitor := newObject(OperatorAPIVersion, PodMonitorKind, namespace, map[string]any{
		"spec": map[string]any{
			"selector":            map[string]any{"matchLabels": map[string]any{PodLabel: PodLabelValue}},
			"podMetricsEndpoints": []any{map[string]any{"port": MetricsPort, "path": "/metrics"}},
		},
	})
	rule := newObject(OperatorAPIVersion, PrometheusRuleKind, namespace, map[string]any{
		"spec": map[string]any{"groups": groups},
	})
	configMap := newObject("v1", "ConfigMap", namespace, map[string]any{
		"data": map[string]any{DashboardFile: string(dashboard)},
	})
	configMap.SetName(Name + "-dashboard")
	configMap.SetLabels(map[string]string{DashboardLabel: "1"})
	return []*unstructured.Unstructured{podMonitor, rule, configMap}, nil
}

// newObject returns an object named Name of apiVersion and kind in
// namespace, with the top-level fields of content.
func newObject(apiVersion, kind, namespace string, content map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(Name)
	u.SetNamespace(namespace)
	return u
}

// toUnstructured returns v as JSON-compatible values.
func toUnstructured(v any) ([]any, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out []any
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("encoding the rules: %w", err)
	}
	return out, nil
}

// ScrapeConfig returns a Prometheus scrape configuration (one job, in the
// YAML of a prometheus.yml's scrape_configs) that finds the controllers'
// pods in namespace through Kubernetes service discovery, for a
// Prometheus without the operator. The pod and namespace labels it adds
// are those the dashboard joins on.
func ScrapeConfig(namespace string) ([]byte, error) {
	job := map[string]any{
		"job_name": namespace + "/" + Name,
		"kubernetes_sd_configs": []any{map[string]any{
			"role": "pod", "namespaces": map[string]any{"names": []any{namespace}},
		}},
		"relabel_configs": []any{
			map[string]any{"action": "keep", "source_labels": []any{"__meta_kubernetes_pod_label_app_kubernetes_io_part_of"}, "regex": PodLabelValue},
			map[string]any{"action": "keep", "source_labels": []any{"__meta_kubernetes_pod_container_port_name"}, "regex": MetricsPort},
			map[string]any{"source_labels": []any{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
			map[string]any{"source_labels": []any{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
		},
	}
	return yaml.Marshal(map[string]any{"scrape_configs": []any{job}})
}
