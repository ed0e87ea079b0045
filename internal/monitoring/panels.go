package monitoring

import (
	"strings"

	"github.com/windlass-dev/windlass/internal/kinds"
)

// Panel is one panel of the dashboard.
type Panel struct {
	// Title is the panel's title, and Description says what it shows.
	Title, Description string
	// Type is the visualization: "stat", "timeseries" or "table".
	Type string
	// Unit is Grafana's unit of the values ("s", "bytes", "short"...).
	Unit string
	// Queries are the panel's PromQL queries.
	Queries []Query
}

// Query is one query of a panel.
type Query struct {
	// Expr is the PromQL expression; it may use $namespace (the namespaces
	// chosen, a regular expression) and $__rate_interval.
	Expr string
	// Legend names each series ({{label}}).
	Legend string
	// Instant asks for the value now, as a table panel shows it.
	Instant bool
}

// Row is a titled group of panels.
type Row struct {
	Title  string
	Panels []Panel
}

// windlass selects the series of Windlass's own processes, to join with
// the Go, process and client series every Go program exports.
const windlass = `on(job, instance) group_left() max by (job, instance) (windlass_build_info)`

// sourceKinds is the regular expression of the kinds that publish
// artifacts, from the registry.
func sourceKinds() string {
	return strings.Join(kinds.Names(kinds.Where(func(k kinds.Kind) bool { return len(k.SourceFor) > 0 })), "|")
}

// Rows are the dashboard's rows, top to bottom.
func Rows() []Row {
	return []Row{fleetRow(), sourcesRow(), appliersRow(), helmRow(), notificationsRow(), imagesRow(), gatesRow(), controlPlaneRow()}
}

// stateStat is a stat panel of the objects in the states matched by re.
func stateStat(title, description, re string) Panel {
	return Panel{Title: title, Description: description, Type: "stat", Unit: "short", Queries: []Query{{
		Expr: `sum(gotk_resource_info{state=~"` + re + `",exported_namespace=~"$namespace"})`, Instant: true}}}
}

func fleetRow() Row {
	return Row{Title: "Fleet", Panels: []Panel{
		stateStat("Ready", "Objects whose last reconciliation succeeded.", "Ready"),
		stateStat("Failing", "Objects whose last reconciliation failed (retried) or whose spec cannot work (stalled).", "Failing|Stalled"),
		stateStat("Held by gates", "Objects a closed gate holds back.", "Held"),
		stateStat("Suspended", "Objects whose spec.suspend stops their reconciliations.", "Suspended"),
		{Title: "Objects by kind and state", Type: "table", Unit: "short", Queries: []Query{{
			Expr: `sum by (customresource_kind, state) (gotk_resource_info{exported_namespace=~"$namespace"})`, Instant: true}}},
		{Title: "Failing objects", Description: "What fails, why (the Ready condition's reason), and for how long.", Type: "table", Unit: "s",
			Queries: []Query{
				{Expr: `max by (kind, exported_namespace, name, reason) (gotk_resource_info{state=~"Failing|Stalled",exported_namespace=~"$namespace"})`, Instant: true},
				{Expr: `time() - max by (kind, exported_namespace, name) (windlass_resource_ready_transition_timestamp_seconds{exported_namespace=~"$namespace"} ` +
					`and on(kind, exported_namespace, name) gotk_resource_info{state=~"Failing|Stalled"})`, Instant: true},
			}},
	}}
}

func sourcesRow() Row {
	sources := `kind=~"` + sourceKinds() + `",exported_namespace=~"$namespace"`
	return Row{Title: "Sources", Panels: []Panel{
		{Title: "Revision age", Description: "How long ago each source's artifact last changed revision.", Type: "table", Unit: "s",
			Queries: []Query{{Expr: `time() - max by (kind, exported_namespace, name) (windlass_artifact_last_update_timestamp_seconds{exported_namespace=~"$namespace"})`, Instant: true}}},
		{Title: "Time since the last successful fetch", Description: "A source not fetched for twice its interval is alerted on.", Type: "timeseries", Unit: "s",
			Queries: []Query{{Expr: `time() - max by (kind, exported_namespace, name) (windlass_reconcile_last_success_timestamp_seconds{` + sources + `})`,
				Legend: "{{kind}} {{exported_namespace}}/{{name}}"}}},
		{Title: "Fetch failures", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (kind) (increase(windlass_source_fetches_total{result="failure"}[$__rate_interval]))`, Legend: "{{kind}}"}}},
		{Title: "Fetch duration (90th percentile)", Type: "timeseries", Unit: "s",
			Queries: []Query{{Expr: `histogram_quantile(0.9, sum by (le, kind) (rate(windlass_source_fetch_duration_seconds_bucket[$__rate_interval])))`, Legend: "{{kind}}"}}},
		{Title: "Artifact size", Type: "timeseries", Unit: "bytes",
			Queries: []Query{{Expr: `max by (kind, exported_namespace, name) (windlass_artifact_size_bytes{exported_namespace=~"$namespace"})`,
				Legend: "{{kind}} {{exported_namespace}}/{{name}}"}}},
	}}
}

func appliersRow() Row {
	return Row{Title: "Appliers", Panels: []Panel{
		{Title: "Reconciliation duration (90th percentile)", Type: "timeseries", Unit: "s",
			Queries: []Query{{Expr: `histogram_quantile(0.9, sum by (le, kind) (rate(gotk_reconcile_duration_seconds_bucket[$__rate_interval])))`, Legend: "{{kind}}"}}},
		{Title: "Reconciliations by result", Type: "timeseries", Unit: "ops",
			Queries: []Query{{Expr: `sum by (kind, result) (rate(windlass_reconcile_total[$__rate_interval]))`, Legend: "{{kind}} {{result}}"}}},
		{Title: "Objects applied", Description: "Objects created, configured and deleted (pruned) by appliers.", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (kind, action) (increase(windlass_applied_objects_total[$__rate_interval]))`, Legend: "{{kind}} {{action}}"}}},
		{Title: "Drift corrections", Description: "Objects set back to what the applied revision declares.", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (kind) (increase(windlass_drift_corrections_total[$__rate_interval]))`, Legend: "{{kind}}"}}},
	}}
}

func helmRow() Row {
	return Row{Title: "Helm", Panels: []Panel{
		{Title: "Releases", Type: "table", Unit: "short", Queries: []Query{{
			Expr: `max by (exported_namespace, name, chart_name, revision, state) (gotk_resource_info{customresource_kind="HelmRelease",exported_namespace=~"$namespace"})`, Instant: true}}},
		{Title: "Helm action duration (90th percentile)", Type: "timeseries", Unit: "s",
			Queries: []Query{{Expr: `histogram_quantile(0.9, sum by (le, action) (rate(windlass_helm_action_duration_seconds_bucket[$__rate_interval])))`, Legend: "{{action}}"}}},
		{Title: "Helm action failures", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (action) (increase(windlass_helm_action_failures_total[$__rate_interval]))`, Legend: "{{action}}"}}},
	}}
}

func notificationsRow() Row {
	return Row{Title: "Notifications and webhooks", Panels: []Panel{
		{Title: "Notifications", Description: "Sent, folded into one sent shortly before, or failed, per Provider.", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (exported_namespace, provider, result) (increase(windlass_notifications_total{exported_namespace=~"$namespace"}[$__rate_interval]))`,
				Legend: "{{exported_namespace}}/{{provider}} {{result}}"}}},
		{Title: "Webhooks", Description: "Webhook requests accepted or refused, per Receiver.", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (exported_namespace, name, result) (increase(windlass_receiver_requests_total[$__rate_interval]))`,
				Legend: "{{exported_namespace}}/{{name}} {{result}}"}}},
	}}
}

func imagesRow() Row {
	return Row{Title: "Images", Panels: []Panel{
		{Title: "Registry scans", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (result) (increase(windlass_image_scans_total[$__rate_interval]))`, Legend: "{{result}}"}}},
		{Title: "Tags per repository", Type: "table", Unit: "short",
			Queries: []Query{{Expr: `max by (exported_namespace, name) (windlass_image_repository_tags{exported_namespace=~"$namespace"})`, Instant: true}}},
		{Title: "Image update pushes", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (result) (increase(windlass_image_update_pushes_total[$__rate_interval]))`, Legend: "{{result}}"}}},
	}}
}

func gatesRow() Row {
	return Row{Title: "Gates", Panels: []Panel{
		{Title: "Gates", Description: "1 while open, 0 while closed.", Type: "table", Unit: "short",
			Queries: []Query{{Expr: `max by (exported_namespace, name) (windlass_gate_open{exported_namespace=~"$namespace"})`, Instant: true}}},
		{Title: "Held by gates", Description: "How long a closed gate has held each object back.", Type: "table", Unit: "s",
			Queries: []Query{{Expr: `time() - max by (kind, exported_namespace, name) (windlass_gate_held_since_timestamp_seconds{exported_namespace=~"$namespace"})`, Instant: true}}},
	}}
}

func controlPlaneRow() Row {
	return Row{Title: "Control plane", Panels: []Panel{
		{Title: "CPU", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `rate(process_cpu_seconds_total[$__rate_interval]) * ` + windlass, Legend: "{{pod}} {{instance}}"}}},
		{Title: "Memory (working set)", Description: "The containers' working set (cAdvisor), else the processes' resident memory; and the limit.",
			Type: "timeseries", Unit: "bytes", Queries: []Query{
				{Expr: `max by (pod) (container_memory_working_set_bytes{container!="",container!="POD"} * on(namespace, pod) group_left() max by (namespace, pod) (windlass_build_info)) ` +
					`or max by (pod) (process_resident_memory_bytes * ` + windlass + `)`, Legend: "{{pod}}"},
				{Expr: `max by (pod) (windlass_memory_limit_bytes)`, Legend: "limit {{pod}}"},
			}},
		{Title: "Go heap and GC", Type: "timeseries", Unit: "bytes", Queries: []Query{
			{Expr: `go_memstats_heap_alloc_bytes * ` + windlass, Legend: "heap {{pod}} {{instance}}"},
			{Expr: `rate(go_gc_duration_seconds_count[$__rate_interval]) * ` + windlass, Legend: "GC/s {{pod}} {{instance}}"},
		}},
		{Title: "Work queue depth", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (name) (workqueue_depth * ` + windlass + `)`, Legend: "{{name}}"}}},
		{Title: "Work queue latency (90th percentile)", Type: "timeseries", Unit: "s",
			Queries: []Query{{Expr: `histogram_quantile(0.9, sum by (le, name) (rate(workqueue_queue_duration_seconds_bucket[$__rate_interval]) * ` + windlass + `))`, Legend: "{{name}}"}}},
		{Title: "API requests", Type: "timeseries", Unit: "reqps",
			Queries: []Query{{Expr: `sum by (code, method) (rate(rest_client_requests_total[$__rate_interval]) * ` + windlass + `)`, Legend: "{{method}} {{code}}"}}},
		{Title: "API client throttling", Description: "The mean time requests wait for the client's rate limiter; requests refused by the API server (429).",
			Type: "timeseries", Unit: "s", Queries: []Query{
				{Expr: `sum by (pod, instance) (rate(rest_client_rate_limiter_duration_seconds_sum[$__rate_interval]) * ` + windlass + `) / ` +
					`sum by (pod, instance) (rate(rest_client_rate_limiter_duration_seconds_count[$__rate_interval]) * ` + windlass + `)`, Legend: "wait {{pod}} {{instance}}"},
				{Expr: `sum by (pod, instance) (rate(rest_client_requests_total{code="429"}[$__rate_interval]) * ` + windlass + `)`, Legend: "429/s {{pod}} {{instance}}"},
			}},
		{Title: "Cached objects", Type: "timeseries", Unit: "short",
			Queries: []Query{{Expr: `sum by (kind) (windlass_cache_objects)`, Legend: "{{kind}}"}}},
	}}
}
