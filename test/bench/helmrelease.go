package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// releaseSecretPrefix starts the name of every Secret Helm keeps a release
// version in: sh.helm.release.v1.<release>.v<version>.
const releaseSecretPrefix = "sh.helm.release.v1."

// helmTimeout is the timeout of every Helm action of a release: its
// objects are Ready as soon as kube-controller-manager writes the
// Deployment's status.
const helmTimeout = 2 * time.Minute

// HelmResult holds the figures of a -kind helmrelease run that the other
// kinds do not have: the Helm release records, and what the no-op tick
// wrote to the cluster, as the API server counted it.
type HelmResult struct {
	// Namespaces tells where the HelmReleases were: NamespacesPerApp or
	// NamespacesOne.
	Namespaces string `json:"namespaces"`
	// ReleaseSecretsBefore and ReleaseSecretsAfter count the Secrets
	// labelled owner=helm named sh.helm.release.v1.* in the releases'
	// namespace, just before and after the no-op tick: N both times.
	ReleaseSecretsBefore int `json:"release_secrets_before"`
	ReleaseSecretsAfter  int `json:"release_secrets_after"`
	// NoopTickNewReleases counts the release Secrets that exist after the
	// tick and did not before: a new release version. It must be 0.
	NoopTickNewReleases int `json:"noop_tick_new_releases"`
	// NoopTickObjectWrites counts the write requests (create, update,
	// patch, apply, delete; not dry-run) the API server served during the
	// tick to anything but a status subresource, an Event, a Lease, or
	// the reconcile requests the benchmark itself sent. It must be 0.
	NoopTickObjectWrites int64 `json:"noop_tick_object_writes"`
	// NoopTickStatusWrites counts the writes to status subresources (the
	// HelmReleases and the HelmRepository recording the handled request).
	NoopTickStatusWrites int64 `json:"noop_tick_status_writes"`
	// NoopTickEventWrites counts the Events written.
	NoopTickEventWrites int64 `json:"noop_tick_event_writes"`
	// NoopTickDryRunRequests counts the dry-run writes (drift detection's
	// server-side apply).
	NoopTickDryRunRequests int64 `json:"noop_tick_dry_run_requests"`
	// NoopTickControllerWrites counts the POST, PUT, PATCH and DELETE
	// requests the controller sent during the tick (its
	// rest_client_requests_total), dry runs and status updates included.
	NoopTickControllerWrites int64 `json:"noop_tick_controller_write_requests"`
	// NoopTickIndexGets counts the GETs of the repository's index answered
	// in full during the tick (a conditional GET answered 304 is not
	// one): the HelmRepository's check for a change, not a content
	// download, so not part of noop_tick_writes.
	NoopTickIndexGets int64 `json:"noop_tick_index_gets"`
	// ReadyIndexGets counts the same in the ready phase.
	ReadyIndexGets int64 `json:"-"`

	// NewReleaseNames names the Secrets counted by NoopTickNewReleases.
	NewReleaseNames []string `json:"-"`
	// ObjectWrites details NoopTickObjectWrites, "VERB resource=count".
	ObjectWrites []string `json:"-"`
}

// runLabel labels the HelmReleases and the application namespaces of a
// -kind helmrelease run with the name of the run's namespace.
const runLabel = "bench.windlass.dev/run"

// helmReleaseApps is the appKind of the run's HelmReleases, labelled
// runLabel, in the run's namespace or one each (-namespaces); the ready
// phase's timeline records the N HelmCharts the controller makes for them
// in the run's namespace, the HelmRepository's.
func (r *run) helmReleaseApps() appKind {
	ns := r.ns
	if r.cfg.Namespaces == NamespacesPerApp {
		ns = ""
	}
	return appKind{
		ns:         ns,
		opts:       []client.ListOption{client.MatchingLabels{runLabel: r.ns}},
		kind:       helmv2.HelmReleaseKind,
		newObject:  func() client.Object { return &helmv2.HelmRelease{} },
		newList:    func() client.ObjectList { return &helmv2.HelmReleaseList{} },
		ready:      hrReady,
		applied:    hrReleased,
		describe:   describeHR,
		sourceList: &sourcev1.HelmChartList{},
		nSources:   r.cfg.N,
	}
}

// appNamespace is the namespace of application i's HelmRelease: the
// run's, or with NamespacesPerApp one of its own named after the run's.
func (r *run) appNamespace(i int) string {
	if r.cfg.Namespaces == NamespacesPerApp {
		return fmt.Sprintf("%s-%d", r.ns, i)
	}
	return r.ns
}

// createAppNamespaces creates the namespaces of NamespacesPerApp, labelled
// runLabel, and waits until kube-controller-manager has given each its
// default ServiceAccount, so that this set-up does not weigh on the ready
// phase. It is not measured.
func (r *run) createAppNamespaces(ctx context.Context) error {
	if r.cfg.Namespaces != NamespacesPerApp {
		return nil
	}
	start := time.Now()
	if err := parallel(ctx, r.cfg.N, workers, func(i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.appNamespace(i), Labels: map[string]string{runLabel: r.ns}}}
		if err := r.c.Create(ctx, ns); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
		return nil
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		var sas corev1.ServiceAccountList
		if err := r.c.List(ctx, &sas, client.MatchingFields{"metadata.name": "default"}); err != nil {
			return fmt.Errorf("listing the default ServiceAccounts: %w", err)
		}
		n := 0
		for _, sa := range sas.Items {
			if strings.HasPrefix(sa.Namespace, r.ns+"-") {
				n++
			}
		}
		if n >= r.cfg.N {
			r.logf("created %d namespaces in %.1fs (not measured)", r.cfg.N, time.Since(start).Seconds())
			return nil
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the default ServiceAccounts of the namespaces: %d of %d: %w", n, r.cfg.N, err)
		}
	}
}

// deleteAppNamespaces deletes the namespaces labelled with the run
// namespace ns (none but a -kind helmrelease run's with NamespacesPerApp).
func deleteAppNamespaces(ctx context.Context, c client.Client, ns string) error {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{runLabel: ns}); err != nil {
		return err
	}
	for i := range list.Items {
		if err := c.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// helmRelease returns the HelmRelease of application i in namespace ns,
// labelled runLabel=run: the bench chart of the HelmRepository in
// namespace run (its HelmChart made from spec.chart), drift detection
// enabled, and the long interval of every source, so that no tick
// interferes with the measures. Its release is named app-i and stored in
// ns.
func helmRelease(ns, run string, i int) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: appName(i), Labels: map[string]string{runLabel: run}},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: sourceInterval},
			Timeout:  &metav1.Duration{Duration: helmTimeout},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:   benchChartName,
				Version: benchChartVersion,
				SourceRef: helmv2.CrossNamespaceObjectReference{
					Kind:      sourcev1.HelmRepositoryKind,
					Name:      helmRepoName,
					Namespace: run,
				},
			}},
			DriftDetection: &helmv2.DriftDetection{Mode: helmv2.DriftDetectionEnabled},
		},
	}
}

// measureHelm runs the phases of a -kind helmrelease run into res: every
// HelmRelease Ready, then a no-op tick that must install and write
// nothing. There is no change phase.
func (r *run) measureHelm(ctx context.Context, res *Result, sources []client.Object) error {
	if err := r.createAppNamespaces(ctx); err != nil {
		return err
	}
	hrs := make([]client.Object, 0, r.cfg.N)
	for _, i := range sortedApps(r.cfg.N) {
		hrs = append(hrs, helmRelease(r.appNamespace(i), r.ns, i))
	}
	kit := r.kit.(*helmKit)
	index0 := kit.IndexGets()
	r.alerts.mark(phaseReady)
	if err := r.readyPhase(ctx, res, sources, hrs); err != nil {
		return err
	}
	h := &HelmResult{Namespaces: r.cfg.Namespaces}
	res.Helm = h
	before, err := r.releaseSecrets(ctx)
	if err != nil {
		return err
	}
	served0, index1 := serverRequestsOrNil(ctx, r.restCfg), kit.IndexGets()
	h.ReadyIndexGets = index1 - index0
	r.alerts.mark(phaseNoop)
	if err := r.noopTick(ctx, res, append(slices.Clone(sources), hrs...)); err != nil {
		return err
	}
	served1 := serverRequestsOrNil(ctx, r.restCfg)
	h.NoopTickIndexGets = kit.IndexGets() - index1
	after, err := r.releaseSecrets(ctx)
	if err != nil {
		return err
	}
	h.ReleaseSecretsBefore, h.ReleaseSecretsAfter = len(before), len(after)
	for name := range after {
		if !before[name] {
			h.NewReleaseNames = append(h.NewReleaseNames, name)
		}
	}
	slices.Sort(h.NewReleaseNames)
	h.NoopTickNewReleases = len(h.NewReleaseNames)
	if served0 == nil || served1 == nil {
		return fmt.Errorf("the API server's request counts are needed to count the no-op tick's writes")
	}
	// The benchmark's own reconcile requests: a merge patch of each object.
	ownPatches := map[string]int64{"PATCH helmreleases": int64(len(hrs)), "PATCH helmrepositories": int64(len(sources))}
	h.classifyWrites(countsDelta(served0, served1), ownPatches)
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		h.NoopTickControllerWrites += res.Details.NoopAPIRequests[m]
	}
	res.NoopTickWrites += h.NoopTickObjectWrites + int64(h.NoopTickNewReleases)
	r.logf("no-op tick: release Secrets %d before, %d after (%d new); %d object writes %s, %d status, %d events, %d dry runs",
		h.ReleaseSecretsBefore, h.ReleaseSecretsAfter, h.NoopTickNewReleases, h.NoopTickObjectWrites,
		strings.Join(h.ObjectWrites, " "), h.NoopTickStatusWrites, h.NoopTickEventWrites, h.NoopTickDryRunRequests)
	return nil
}

// releaseSecrets returns the Helm release Secrets of the run's
// HelmReleases, "namespace/name": labelled owner=helm, named
// sh.helm.release.v1.*, in the HelmReleases' namespaces. It reads their
// metadata only.
func (r *run) releaseSecrets(ctx context.Context) (map[string]bool, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.c.List(ctx, list, client.InNamespace(r.apps.ns), client.MatchingLabels{"owner": "helm"}); err != nil {
		return nil, fmt.Errorf("listing the Helm release Secrets: %w", err)
	}
	names := map[string]bool{}
	for _, s := range list.Items {
		ours := s.Namespace == r.ns || strings.HasPrefix(s.Namespace, r.ns+"-")
		if ours && strings.HasPrefix(s.Name, releaseSecretPrefix) {
			names[s.Namespace+"/"+s.Name] = true
		}
	}
	return names, nil
}

// classifyWrites sorts the API server's requests of the tick, counted by
// "VERB resource[/subresource][ dry-run]" (see parseServerRequests), into
// h's write counts, leaving out the reads and, from the keys of own, the
// requests the benchmark itself sent.
func (h *HelmResult) classifyWrites(served, own map[string]int64) {
	h.NoopTickObjectWrites, h.NoopTickStatusWrites, h.NoopTickEventWrites, h.NoopTickDryRunRequests = 0, 0, 0, 0
	h.ObjectWrites = nil
	for _, key := range slices.Sorted(maps.Keys(served)) {
		n := served[key] - own[key]
		verb, resource, _ := strings.Cut(key, " ")
		switch {
		case n <= 0 || !isWriteVerb(verb) || strings.HasSuffix(resource, "reviews"):
			// Reads, and access or token reviews, which store nothing.
		case strings.HasSuffix(resource, " dry-run"):
			h.NoopTickDryRunRequests += n
		case strings.HasSuffix(resource, "/status"):
			h.NoopTickStatusWrites += n
		case resource == "events":
			h.NoopTickEventWrites += n
		case resource == "leases":
			// Leader election and node heartbeats of the control plane.
		default:
			h.NoopTickObjectWrites += n
			h.ObjectWrites = append(h.ObjectWrites, fmt.Sprintf("%s=%d", key, n))
		}
	}
}

// isWriteVerb reports whether an apiserver_request_total verb changes
// what is stored.
func isWriteVerb(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// hrReady reports whether a HelmRelease's Ready condition is True for its
// current generation.
func hrReady(obj client.Object) bool {
	hr := obj.(*helmv2.HelmRelease)
	return hr.Status.ObservedGeneration == hr.Generation &&
		apimeta.IsStatusConditionTrue(hr.Status.Conditions, meta.ReadyCondition)
}

// hrReleased reports whether a HelmRelease's latest release is deployed.
func hrReleased(obj client.Object) bool {
	latest := obj.(*helmv2.HelmRelease).Status.History.Latest()
	return latest != nil && latest.Status == "deployed"
}

// describeHR summarises a HelmRelease's Ready condition and latest
// release.
func describeHR(obj client.Object) string {
	hr := obj.(*helmv2.HelmRelease)
	release := "no release"
	if l := hr.Status.History.Latest(); l != nil {
		release = fmt.Sprintf("release v%d %s", l.Version, l.Status)
	}
	c := apimeta.FindStatusCondition(hr.Status.Conditions, meta.ReadyCondition)
	if c == nil {
		return "no Ready condition, " + release
	}
	return fmt.Sprintf("Ready=%s %s: %s (%s)", c.Status, c.Reason, c.Message, release)
}

// helmRows returns the table rows of a -kind helmrelease run's no-op tick.
func helmRows(h *HelmResult) [][2]string {
	rows := [][2]string{
		{"  release Secrets before/after the tick", fmt.Sprintf("%d/%d, %d new %s", h.ReleaseSecretsBefore,
			h.ReleaseSecretsAfter, h.NoopTickNewReleases, strings.Join(firstN(h.NewReleaseNames, 5), " "))},
		{"  no-op tick object writes", fmt.Sprintf("%d %s", h.NoopTickObjectWrites, strings.Join(h.ObjectWrites, " "))},
		{"  no-op tick other writes", fmt.Sprintf("%d status, %d events, %d dry runs; controller write requests %d",
			h.NoopTickStatusWrites, h.NoopTickEventWrites, h.NoopTickDryRunRequests, h.NoopTickControllerWrites)},
		{"  index GETs answered in full", fmt.Sprintf("%d in the ready phase, %d in the no-op tick", h.ReadyIndexGets, h.NoopTickIndexGets)},
	}
	return rows
}
