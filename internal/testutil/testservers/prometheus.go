package testservers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// PrometheusOptions configures StartPrometheus; empty fields take the
// defaults below.
type PrometheusOptions struct {
	// Interval is both the scrape and the rule evaluation interval
	// (default 1s); each scrape times out after it too.
	Interval time.Duration
	// Targets are the endpoints Prometheus scrapes, over plain HTTP.
	Targets []PrometheusTarget
	// Rules are the contents of rule files: YAML of Prometheus rule groups
	// (groups: [{name, rules: [{alert or record, expr, for, labels, ...}]}]).
	Rules [][]byte
}

// PrometheusTarget is a static scrape target.
type PrometheusTarget struct {
	// Job is the target's job label, and the name of its scrape
	// configuration; targets may share one. Required.
	Job string
	// Addr is the target's host:port. Required.
	Addr string
	// Path is the path of its metrics (default /metrics).
	Path string
	// Labels are added to every series scraped from the target.
	Labels map[string]string
}

// Prometheus is a running Prometheus server that scrapes its targets and
// evaluates its rules every Interval, keeps its samples in a temporary
// folder, and sends alerts nowhere (no Alertmanager): Alerts reads them.
type Prometheus struct {
	// Addr is the server's host:port on 127.0.0.1 (plain HTTP).
	Addr string
	// Interval is the scrape and rule evaluation interval.
	Interval time.Duration
	// ConfigFile is the path of the configuration file it runs with.
	ConfigFile string

	rulesDir string
	proc     *childproc.Process
	client   *http.Client
}

// Sample is one series of an instant query's result: its labels (with
// __name__ unless the expression dropped it) and its value at the query's
// time.
type Sample struct {
	Labels map[string]string
	Value  float64
	Time   time.Time
}

// Vector is an instant query's result, one Sample per series.
type Vector []Sample

// Alert is an active alert of an alerting rule.
type Alert struct {
	// Labels are the alert's labels, with alertname.
	Labels map[string]string
	// Annotations are its annotations, templates expanded.
	Annotations map[string]string
	// State is "pending" (its expression holds, but not yet for the rule's
	// "for") or "firing".
	State string
	// ActiveAt is when its expression began to hold.
	ActiveAt time.Time
	// Value is the expression's value at the last evaluation.
	Value float64
}

// promConfig is the subset of Prometheus's configuration file that
// StartPrometheus writes; JSON is YAML, so it is written as JSON.
type promConfig struct {
	Global        map[string]any   `json:"global"`
	RuleFiles     []string         `json:"rule_files"`
	ScrapeConfigs []map[string]any `json:"scrape_configs"`
}

// StartPrometheus runs Prometheus on a free loopback port, scraping
// opts.Targets and evaluating opts.Rules every opts.Interval, with its
// storage in a temporary folder; it waits until the server is ready
// (GET /-/ready) and stops it when t ends. It fails t when the test
// servers are not built, or when Prometheus refuses its configuration or
// rules (its output says why).
func StartPrometheus(t testing.TB, opts PrometheusOptions) *Prometheus {
	t.Helper()
	bin := binary(t, prometheusBinary)
	dir := t.TempDir()
	p := &Prometheus{
		Addr:       freeAddr(t),
		Interval:   opts.Interval,
		ConfigFile: filepath.Join(dir, "prometheus.yml"),
		rulesDir:   filepath.Join(dir, "rules"),
		client:     &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}},
	}
	t.Cleanup(p.client.CloseIdleConnections)
	if p.Interval <= 0 {
		p.Interval = time.Second
	}
	p.writeRules(t, opts.Rules)
	interval := p.Interval.String()
	cfg := promConfig{
		Global: map[string]any{
			"scrape_interval":     interval,
			"scrape_timeout":      interval,
			"evaluation_interval": interval,
		},
		RuleFiles:     []string{filepath.Join(p.rulesDir, "*.yml")},
		ScrapeConfigs: scrapeConfigs(t, opts.Targets),
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.ConfigFile, data, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin,
		"--config.file="+p.ConfigFile,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+p.Addr,
		// POST /-/reload, for ReplaceRules.
		"--web.enable-lifecycle",
		// Scrape the targets within a moment of the start (or of a
		// reload), not after the default 5s of throttling.
		"--scrape.discovery-reload-interval=100ms",
	)
	cmd.Dir = dir
	cmd.Env = serverEnv(dir)
	p.proc = start(t, "prometheus", cmd)
	waitHTTP(t, "prometheus", p.proc, p.URL()+"/-/ready", nil)
	return p
}

// scrapeConfigs returns one scrape configuration per job of targets, in
// the order they come, each target a static group of its own so that it
// keeps its labels and path.
func scrapeConfigs(t testing.TB, targets []PrometheusTarget) []map[string]any {
	t.Helper()
	configs := []map[string]any{}
	byJob := map[string]map[string]any{}
	for _, target := range targets {
		if target.Job == "" || target.Addr == "" {
			t.Fatalf("a Prometheus target needs a Job and an Addr: %+v", target)
		}
		labels := maps.Clone(target.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		// The target's own path: metrics_path is the job's.
		labels["__metrics_path__"] = target.Path
		if target.Path == "" {
			labels["__metrics_path__"] = "/metrics"
		}
		group := map[string]any{"targets": []string{target.Addr}, "labels": labels}
		job, ok := byJob[target.Job]
		if !ok {
			job = map[string]any{"job_name": target.Job, "static_configs": []map[string]any{}}
			byJob[target.Job] = job
			configs = append(configs, job)
		}
		job["static_configs"] = append(job["static_configs"].([]map[string]any), group)
	}
	return configs
}

// writeRules replaces the rule files of p's rules folder with rules.
func (p *Prometheus) writeRules(t testing.TB, rules [][]byte) {
	t.Helper()
	if err := os.RemoveAll(p.rulesDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.rulesDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, r := range rules {
		if err := os.WriteFile(filepath.Join(p.rulesDir, fmt.Sprintf("rules-%d.yml", i)), r, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// URL returns the server's base URL, http://host:port.
func (p *Prometheus) URL() string { return "http://" + p.Addr }

// RuleFiles returns the paths of the rule files Prometheus evaluates, in
// the order of the rules they hold (for promtool).
func (p *Prometheus) RuleFiles() []string {
	files, _ := filepath.Glob(filepath.Join(p.rulesDir, "*.yml"))
	slices.SortFunc(files, func(a, b string) int { return ruleIndex(a) - ruleIndex(b) })
	return files
}

// ruleIndex returns i of a rule file's path .../rules-i.yml.
func ruleIndex(path string) int {
	i, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "rules-"), ".yml"))
	return i
}

// ReplaceRules replaces the rule files of p with rules and reloads its
// configuration (POST /-/reload), which returns once the new rules are
// loaded. Alerts of rules that stay keep their state. It fails t when
// Prometheus refuses the rules.
func (p *Prometheus) ReplaceRules(t testing.TB, rules ...[]byte) {
	t.Helper()
	p.writeRules(t, rules)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"/-/reload", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("reloading prometheus: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reloading prometheus: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
}

// apiResponse is the envelope of every answer of Prometheus's HTTP API.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// get calls GET path?query of p's HTTP API and decodes its data into out,
// failing when the status is not "success".
func (p *Prometheus) get(ctx context.Context, path string, query url.Values, out any) error {
	u := p.URL() + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("GET %s: %s: %.200s", path, resp.Status, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s: %s", path, resp.Status, r.ErrorType, r.Error)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("GET %s: decoding %.200s: %w", path, r.Data, err)
	}
	return nil
}

// Query evaluates the instant query expr now (GET /api/v1/query) and
// returns its samples. A scalar is one sample without labels; a range
// vector or a string is an error, as is any status but "success" (a bad
// expression, say).
func (p *Prometheus) Query(ctx context.Context, expr string) (Vector, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	switch data.ResultType {
	case "vector":
		var result []struct {
			Metric map[string]string `json:"metric"`
			Value  promValue         `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &result); err != nil {
			return nil, fmt.Errorf("query %q: %w", expr, err)
		}
		v := make(Vector, 0, len(result))
		for _, s := range result {
			v = append(v, Sample{Labels: s.Metric, Value: s.Value.value, Time: s.Value.time})
		}
		return v, nil
	case "scalar":
		var s promValue
		if err := json.Unmarshal(data.Result, &s); err != nil {
			return nil, fmt.Errorf("query %q: %w", expr, err)
		}
		return Vector{{Labels: map[string]string{}, Value: s.value, Time: s.time}}, nil
	default:
		return nil, fmt.Errorf("query %q: the result is a %s, not an instant vector", expr, data.ResultType)
	}
}

// promValue is a sample of the HTTP API: [unix seconds, "value"].
type promValue struct {
	time  time.Time
	value float64
}

// UnmarshalJSON decodes [1712345678.123, "42"].
func (v *promValue) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("a sample is [time, value], not %s", b)
	}
	var ts float64
	if err := json.Unmarshal(pair[0], &ts); err != nil {
		return fmt.Errorf("sample time %s: %w", pair[0], err)
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return fmt.Errorf("sample value %s: %w", pair[1], err)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("sample value: %w", err)
	}
	v.time = time.UnixMilli(int64(ts*1000 + 0.5))
	v.value = f
	return nil
}

// Alerts returns the active alerts, pending and firing (GET
// /api/v1/alerts).
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
			State       string            `json:"state"`
			ActiveAt    time.Time         `json:"activeAt"`
			Value       string            `json:"value"`
		} `json:"alerts"`
	}
	if err := p.get(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return nil, err
	}
	alerts := make([]Alert, 0, len(data.Alerts))
	for _, a := range data.Alerts {
		value, err := strconv.ParseFloat(a.Value, 64)
		if err != nil {
			return nil, fmt.Errorf("alert %v: value %q: %w", a.Labels, a.Value, err)
		}
		alerts = append(alerts, Alert{Labels: a.Labels, Annotations: a.Annotations, State: a.State,
			ActiveAt: a.ActiveAt, Value: value})
	}
	return alerts, nil
}

// PrometheusTargetHealth is the state of an active scrape target (GET
// /api/v1/targets).
type PrometheusTargetHealth struct {
	// Job is the target's job (its scrape pool).
	Job string
	// URL is the URL it is scraped at.
	URL string
	// Labels are its labels after relabeling (job, instance and its own).
	Labels map[string]string
	// Health is "up", "down" or "unknown" (not scraped yet).
	Health string
	// LastError is the last scrape's error, if it failed.
	LastError string
	// LastScrape is when it was last scraped.
	LastScrape time.Time
}

// Targets returns the active scrape targets and their health (GET
// /api/v1/targets?state=active).
func (p *Prometheus) Targets(ctx context.Context) ([]PrometheusTargetHealth, error) {
	var data struct {
		ActiveTargets []struct {
			ScrapePool string            `json:"scrapePool"`
			ScrapeURL  string            `json:"scrapeUrl"`
			Labels     map[string]string `json:"labels"`
			Health     string            `json:"health"`
			LastError  string            `json:"lastError"`
			LastScrape time.Time         `json:"lastScrape"`
		} `json:"activeTargets"`
	}
	if err := p.get(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &data); err != nil {
		return nil, err
	}
	targets := make([]PrometheusTargetHealth, 0, len(data.ActiveTargets))
	for _, a := range data.ActiveTargets {
		targets = append(targets, PrometheusTargetHealth{Job: a.ScrapePool, URL: a.ScrapeURL, Labels: a.Labels,
			Health: a.Health, LastError: a.LastError, LastScrape: a.LastScrape})
	}
	return targets, nil
}

// WaitScraped waits until every target of job has been scraped
// successfully, that is until `up{job="<job>"}` is 1 for each of them,
// and fails t when that takes longer than 30 seconds (saying what the
// scrapes failed with) or Prometheus exits.
func (p *Prometheus) WaitScraped(t testing.TB, job string) {
	t.Helper()
	expr := fmt.Sprintf("up{job=%q}", job)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var last string
	for {
		if p.proc.Exited() {
			t.Fatalf("prometheus exited before it scraped job %s: %v\n%s", job, p.proc.Err(), lastLines(p.proc.Output(), 30))
		}
		v, err := p.Query(ctx, expr)
		switch {
		case err != nil:
			last = err.Error()
		case len(v) == 0:
			last = "no target of job " + job + " scraped yet"
		default:
			up := true
			for _, s := range v {
				up = up && s.Value == 1
			}
			if up {
				return
			}
			last = fmt.Sprintf("%s is %v", expr, v)
		}
		select {
		case <-ctx.Done():
			last += "; " + p.targetErrors(job)
			t.Fatalf("prometheus did not scrape job %s within %s: %s", job, startTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// targetErrors describes the targets of job that are not up, for an error
// message.
func (p *Prometheus) targetErrors(job string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	targets, err := p.Targets(ctx)
	if err != nil {
		return err.Error()
	}
	var down []string
	for _, target := range targets {
		if target.Job == job && target.Health != "up" {
			down = append(down, fmt.Sprintf("%s is %s: %s", target.URL, target.Health, target.LastError))
		}
	}
	if len(down) == 0 {
		return fmt.Sprintf("no target of job %s is down (%d targets)", job, len(targets))
	}
	return strings.Join(down, "; ")
}

// Promtool returns the path of the promtool binary of PrometheusVersion
// (`promtool check rules FILE...`, `promtool test rules FILE...`), failing
// t when the test servers are not built.
func Promtool(t testing.TB) string {
	t.Helper()
	return binary(t, promtoolBinary)
}
