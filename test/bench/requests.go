package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RequestBudget is what the controller asked of the API server in one
// phase, per application: in all, by the kind the requests served, and by
// request ("verb resource", "dry-run" when one), from the controller's
// windlass_api_requests_total. Watches are left out: they are
// connections, not requests per application.
type RequestBudget struct {
	// Total is every request of the phase.
	Total int64 `json:"total"`
	// PerApp is every request of the phase divided by the number of
	// applications.
	PerApp float64 `json:"per_app"`
	// ByKind splits PerApp by the kind whose reconciler made the
	// requests: requests on a kind's objects and their status count for
	// it, Events for the kind of the object they are about, the
	// applied objects (Deployments, Services, ...) for the applier;
	// "controller" is discovery and leader election.
	ByKind map[string]float64 `json:"by_kind"`
	// ByRequest splits PerApp by verb and resource.
	ByRequest map[string]float64 `json:"by_request"`
}

// requestCounts are the controller's requests by "verb resource[ dry-run]".
type requestCounts map[string]int64

// apiRequestsByRequest scrapes the controller's windlass_api_requests_total
// by verb and resource, without the watches, summed over the processes of
// its group (the replicas of a -replicas run).
func (c *controller) apiRequestsByRequest() (requestCounts, error) {
	var bodies [][]byte
	for _, p := range c.all() {
		body, err := p.metrics()
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, body)
	}
	return sumAPIRequests(bodies), nil
}

// apiRequestsFamily is the family of the controller's API requests.
const apiRequestsFamily = "windlass_api_requests_total"

// sumAPIRequests adds up the windlass_api_requests_total of several
// expositions (see parseAPIRequests).
func sumAPIRequests(bodies [][]byte) requestCounts {
	out := requestCounts{}
	for _, body := range bodies {
		for k, v := range parseAPIRequests(body) {
			out[k] += v
		}
	}
	return out
}

// awaitAPIRequests is apiRequestsByRequest once the controller's metrics
// port answers, which it may not yet do right after the start.
func (c *controller) awaitAPIRequests(ctx context.Context) (requestCounts, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		counts, err := c.apiRequestsByRequest()
		if err == nil || time.Now().After(deadline) {
			return counts, err
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// parseAPIRequests reads windlass_api_requests_total out of a text
// exposition.
func parseAPIRequests(body []byte) requestCounts {
	out := requestCounts{}
	forEachSample(body, apiRequestsFamily, func(l map[string]string, v float64) {
		if l["verb"] == "watch" {
			return
		}
		key := l["verb"] + " " + l["resource"]
		if l["dry_run"] == "true" {
			key += " dry-run"
		}
		out[key] += int64(v)
	})
	return out
}

// kindOfResource names the kinds of the resources a run's reconcilers
// read and write as themselves.
var kindOfResource = map[string]string{
	"gitrepositories": "GitRepository", "ocirepositories": "OCIRepository", "buckets": "Bucket",
	"helmrepositories": "HelmRepository", "helmcharts": "HelmChart", "kustomizations": "Kustomization",
	"helmreleases": "HelmRelease", "gates": "Gate", "discovery": "controller", "leases": "controller",
}

// budget turns the requests of a phase (after less before) into a
// RequestBudget for n applications; events are split by the kind of the
// object they are about (eventsByKind), and the requests on any other
// resource count for appliedBy.
func budget(before, after requestCounts, events map[string]int64, n int, appliedBy string) *RequestBudget {
	b := &RequestBudget{ByKind: map[string]float64{}, ByRequest: map[string]float64{}}
	var total, eventRequests int64
	for key, v := range after {
		d := v - before[key]
		if d <= 0 {
			continue
		}
		total += d
		b.ByRequest[key] = ratio(d, n)
		_, resource, _ := strings.Cut(key, " ")
		resource, _, _ = strings.Cut(resource, " ")
		base, _, _ := strings.Cut(resource, "/")
		switch kind, ok := kindOfResource[base]; {
		case base == "events":
			eventRequests += d
		case ok:
			b.ByKind[kind] += float64(d)
		default:
			b.ByKind[appliedBy] += float64(d)
		}
	}
	// Events the list did not see (or saw of other kinds' objects) count
	// apart.
	var attributed int64
	for kind, v := range events {
		v = min(v, eventRequests-attributed)
		if v <= 0 {
			continue
		}
		b.ByKind[kind] += float64(v)
		attributed += v
	}
	if rest := eventRequests - attributed; rest > 0 {
		b.ByKind["events (unattributed)"] += float64(rest)
	}
	for kind, v := range b.ByKind {
		b.ByKind[kind] = ratio(int64(v), n)
	}
	b.Total, b.PerApp = total, ratio(total, n)
	return b
}

// ratio divides v by n, to two decimals.
func ratio(v int64, n int) float64 {
	return math.Round(float64(v)/float64(max(n, 1))*100) / 100
}

// eventsByKind counts the Events recorded in ns since since, by the kind of
// the object they are about: each Event is one create, and each repeat
// folded into it (its count) one more request.
func eventsByKind(ctx context.Context, c client.Client, ns string, since time.Time) (map[string]int64, error) {
	return eventsBy(ctx, c, ns, since, func(e corev1.Event) string { return e.InvolvedObject.Kind })
}

// eventsBy counts the Events about the run's kinds' objects recorded in ns
// since since (first recorded then: their creation), by key.
func eventsBy(ctx context.Context, c client.Client, ns string, since time.Time, key func(corev1.Event) string) (map[string]int64, error) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, kind := range kindOfResource {
		ours[kind] = true
	}
	out := map[string]int64{}
	for _, e := range list.Items {
		if e.CreationTimestamp.Time.Before(since.Truncate(time.Second)) || !ours[e.InvolvedObject.Kind] {
			continue // older, or kube-controller-manager's about the applied objects
		}
		out[key(e)] += int64(max(e.Count, 1))
	}
	return out, nil
}

// formatBudget prints a budget's kinds or requests, largest first.
func formatBudget(m map[string]float64) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, m[k]))
	}
	return strings.Join(parts, " ")
}
