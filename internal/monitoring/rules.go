package monitoring

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// RunbookURL is where the alerts' runbooks are: docs/operations.md, one
// heading per alert.
const RunbookURL = "https://github.com/windlass-dev/windlass/blob/main/docs/operations.md#"

// RuleOptions are the thresholds of the alert rules. The zero value of a
// field takes its default (DefaultRuleOptions).
type RuleOptions struct {
	// FailingFor is how long an object fails before WindlassObjectFailing.
	FailingFor time.Duration
	// GateHeldFor is how long a gate holds an object back before
	// WindlassGateHeldTooLong.
	GateHeldFor time.Duration
	// RestartWindow and Restarts: WindlassControllerRestarting fires when
	// a controller started Restarts times within RestartWindow.
	RestartWindow time.Duration
	Restarts      int
	// ThrottledFor is how long the controllers wait on their rate limiter
	// (or are refused with 429) before WindlassControllerThrottled, and
	// ThrottleWait the mean wait per request that counts as throttled.
	ThrottledFor time.Duration
	ThrottleWait time.Duration
	// MemoryRatio is the share of the memory limit that the controller's
	// memory must pass for MemoryFor before WindlassMemoryNearLimit.
	MemoryRatio float64
	MemoryFor   time.Duration
	// RateWindow is the window of the rates the rules compute.
	RateWindow time.Duration
}

// DefaultRuleOptions are the thresholds the install uses.
var DefaultRuleOptions = RuleOptions{
	FailingFor: 10 * time.Minute, GateHeldFor: 24 * time.Hour,
	RestartWindow: 30 * time.Minute, Restarts: 2,
	ThrottledFor: 10 * time.Minute, ThrottleWait: 100 * time.Millisecond,
	MemoryRatio: 0.9, MemoryFor: 5 * time.Minute, RateWindow: 5 * time.Minute,
}

// withDefaults returns o with its zero fields defaulted.
func (o RuleOptions) withDefaults() RuleOptions {
	d := DefaultRuleOptions
	def := func(v *time.Duration, dv time.Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	def(&o.FailingFor, d.FailingFor)
	def(&o.GateHeldFor, d.GateHeldFor)
	def(&o.RestartWindow, d.RestartWindow)
	def(&o.ThrottledFor, d.ThrottledFor)
	def(&o.ThrottleWait, d.ThrottleWait)
	def(&o.MemoryFor, d.MemoryFor)
	def(&o.RateWindow, d.RateWindow)
	if o.Restarts == 0 {
		o.Restarts = d.Restarts
	}
	if o.MemoryRatio == 0 {
		o.MemoryRatio = d.MemoryRatio
	}
	return o
}

// RuleGroup is a group of Prometheus rules, as a rule file and a
// PrometheusRule's spec.groups hold them.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// objectName names the object an alert is about in its annotations.
const objectName = "{{ $labels.kind }} {{ $labels.exported_namespace }}/{{ $labels.name }}"

// process names the controller process an alert is about.
const process = "{{ $labels.job }} {{ $labels.instance }}"

// RuleGroups returns Windlass's alert rules with the thresholds of o.
func RuleGroups(o RuleOptions) []RuleGroup {
	o = o.withDefaults()
	window := duration(o.RateWindow)
	byObject := "max by (kind, exported_namespace, name)"
	rules := []Rule{
		alert("WindlassObjectFailing", "warning", o.FailingFor,
			byObject+` (gotk_resource_info{state=~"Failing|Stalled"})`,
			objectName+" is failing",
			objectName+" has been failing (or stalled) for more than "+duration(o.FailingFor)+
				": its Ready condition says why (windlass get, or the Failing objects table of the dashboard)."),
		alert("WindlassSourceNotFetched", "warning", 0,
			`(time() - `+byObject+` (windlass_reconcile_last_success_timestamp_seconds{kind=~"`+sourceKinds()+`"}))`+
				` > on(kind, exported_namespace, name) (2 * `+byObject+` (windlass_resource_interval_seconds))`+
				` unless on(kind, exported_namespace, name) gotk_resource_info{state=~"Held|Suspended"}`,
			objectName+" has not been fetched for twice its interval",
			objectName+" last fetched {{ $value | humanizeDuration }} ago, more than twice its spec.interval: "+
				"its source is unreachable, refuses the credentials, or the controller is behind."),
		alert("WindlassGateHeldTooLong", "info", 0,
			`time() - `+byObject+` (windlass_gate_held_since_timestamp_seconds) > `+seconds(o.GateHeldFor),
			objectName+" has been held by a gate for more than "+duration(o.GateHeldFor),
			"A closed gate has held "+objectName+" back for {{ $value | humanizeDuration }}: open the gate, or see why it stays closed."),
		alert("WindlassControllerRestarting", "warning", 0,
			fmt.Sprintf(`changes(process_start_time_seconds[%s]) * %s >= %d`, duration(o.RestartWindow), windlass, o.Restarts),
			"A Windlass controller is restarting",
			"The controller "+process+" restarted {{ $value }} times within "+duration(o.RestartWindow)+
				": its log (the previous container's) says why: a crash, an OOM kill, a failed probe."),
		alert("WindlassControllerThrottled", "warning", o.ThrottledFor,
			`(sum by (job, instance) (rate(rest_client_rate_limiter_duration_seconds_sum[`+window+`]))`+
				` / sum by (job, instance) (rate(rest_client_rate_limiter_duration_seconds_count[`+window+`])) > `+seconds(o.ThrottleWait)+`)`+
				` or (sum by (job, instance) (rate(rest_client_requests_total{code="429"}[`+window+`]) * `+windlass+`) > 0)`,
			"A Windlass controller is throttled by its API rate limit",
			"The controller "+process+" waits on its client rate limiter (--kube-api-qps, --kube-api-burst) "+
				"or is refused by the API server's priority and fairness (429)."),
		alert("WindlassMemoryNearLimit", "warning", o.MemoryFor,
			`max by (job, instance) (process_resident_memory_bytes) / on(job, instance) max by (job, instance) (windlass_memory_limit_bytes) > `+
				number(o.MemoryRatio),
			"A Windlass controller is near its memory limit",
			"The controller "+process+" uses {{ $value | humanizePercentage }} of its container's memory limit."),
	}
	return []RuleGroup{{Name: "windlass", Rules: rules}}
}

// alert returns an alerting rule with its runbook link.
func alert(name, severity string, forDuration time.Duration, expr, summary, description string) Rule {
	r := Rule{Alert: name, Expr: expr, Labels: map[string]string{"severity": severity},
		Annotations: map[string]string{"summary": summary, "description": description, "runbook_url": RunbookURL + strings.ToLower(name)}}
	if forDuration > 0 {
		r.For = duration(forDuration)
	}
	return r
}

// RuleFile returns the rules of o as a Prometheus rule file.
func RuleFile(o RuleOptions) ([]byte, error) {
	return yaml.Marshal(map[string]any{"groups": RuleGroups(o)})
}

// duration returns d in Prometheus's duration format (1h30m, 10s, 250ms).
func duration(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

// seconds returns d as a number of seconds for PromQL.
func seconds(d time.Duration) string {
	return number(d.Seconds())
}

// number returns v for PromQL, to the thousandth, without trailing zeros.
func number(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}
