package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// Defaults of an -image run.
const (
	// defaultImageTags is the number of tags of every registry
	// repository.
	defaultImageTags = 1000
	// defaultImageInterval is the interval of the ImageRepositories, and
	// of the automations unless given.
	defaultImageInterval = time.Minute
)

// ImageResult holds the figures of an -image run: N image pipelines (an
// ImageRepository of tags tags, a semver ImagePolicy, an
// ImageUpdateAutomation of its own folder) that all push to main of one
// git repository.
type ImageResult struct {
	// TagsPerRepository is the number of tags of each registry repository.
	TagsPerRepository int `json:"tags_per_repository"`
	// IntervalSeconds is the ImageRepositories' interval, and
	// AutomationIntervalSeconds the automations'.
	IntervalSeconds           float64 `json:"interval_seconds"`
	AutomationIntervalSeconds float64 `json:"automation_interval_seconds"`
	// RegistrySetupSeconds is how long filling the registry took (not
	// measured otherwise: part of the set-up).
	RegistrySetupSeconds float64 `json:"registry_setup_seconds"`
	// PoliciesElectedSeconds runs from the creation of the first object
	// until every ImagePolicy had a status.latestRef.
	PoliciesElectedSeconds float64 `json:"policies_elected_seconds"`
	// Ready runs from the creation of the first object until every
	// automation had pushed (status.lastPushCommit) and was Ready: one
	// scan pass (N scan passes) and N commits are expected.
	Ready ImagePhase `json:"ready"`
	// ReadySettle runs from there until every automation had seen the
	// head of main (status.observedSourceRevision): those that pushed
	// before the last push clone again once, at their interval.
	ReadySettle ImagePhase `json:"ready_settle"`
	// ChangedRepositories is K = max(1, N/10), the repositories that get
	// the higher tag changeTag in the change phase.
	ChangedRepositories int `json:"changed_repositories"`
	// Change runs from the push of changeTag to the K repositories (and a
	// reconcile request of their ImageRepositories) until their K
	// automations pushed it: K commits are expected.
	Change ImagePhase `json:"change"`
	// ChangeSettle is ReadySettle after the change.
	ChangeSettle ImagePhase `json:"change_settle"`
	// Noop is a window of 1.2 repository intervals with nothing changed:
	// every repository scans once or twice (N to 2N scan passes: the
	// repositories created together scan together, so rather N or 2N),
	// and nothing is committed or written.
	Noop ImagePhase `json:"noop_tick"`
	// NoopScanPassesPerRepository is Noop.ScanPasses over N: 1 or 2.
	NoopScanPassesPerRepository float64 `json:"noop_tick_scan_passes_per_repository"`
	// RepositoriesReady, PoliciesReady and AutomationsReady count the
	// objects Ready at the end of the run (N each).
	RepositoriesReady int `json:"repositories_ready"`
	PoliciesReady     int `json:"policies_ready"`
	AutomationsReady  int `json:"automations_ready"`

	// Warnings are the Warning events of the run, "count× Kind Reason:
	// message" with the commit hashes of the messages replaced by
	// <hash>, most frequent first.
	Warnings []string `json:"-"`
	// ElectedQuantiles and PushedQuantiles are the seconds after which
	// 10%, 50%, 90% and 99% of the policies had elected and of the
	// automations had pushed, in the ready phase.
	ElectedQuantiles, PushedQuantiles []float64 `json:"-"`
}

// ImagePhase holds what one phase of an -image run cost: the registry's
// requests, the git server's, the commits on main and the API server's
// writes to the image kinds.
type ImagePhase struct {
	// Seconds is the phase's length.
	Seconds float64 `json:"seconds"`
	// TagListRequests counts GET /v2/<name>/tags/list, every page (a
	// list of up to 1000 tags is one page).
	TagListRequests int64 `json:"tag_list_requests"`
	// ScanPasses counts the first pages: one per scan of a repository.
	ScanPasses int64 `json:"scan_passes"`
	// OtherRegistryRequests counts the registry's other requests (the
	// client's ping of /v2/ before each scan).
	OtherRegistryRequests int64 `json:"other_registry_requests"`
	// RegistryDownloads counts the manifests and blobs downloaded.
	RegistryDownloads int64 `json:"registry_downloads"`
	// Commits is the number of commits added to main.
	Commits int `json:"commits"`
	// PushAttempts counts the pushes begun (the receive-pack
	// advertisements), Pushes those sent (POST git-receive-pack), and
	// PushRetries the attempts that did not add a commit: races lost to
	// another automation's push.
	PushAttempts int64 `json:"push_attempts"`
	Pushes       int64 `json:"pushes"`
	PushRetries  int64 `json:"push_retries"`
	// Fetches counts the clones and fetches (POST git-upload-pack);
	// RefListings the upload-pack advertisements (an ls-remote, and the
	// start of every clone or fetch).
	Fetches     int64 `json:"fetches"`
	RefListings int64 `json:"ref_listings"`
	// ImageObjectWrites counts the API server's writes to ImageRepositories,
	// ImagePolicies, ImageUpdateAutomations and GitRepositories other than
	// their status and the benchmark's own; ImageStatusWrites those to
	// their status; EventWrites the Events written.
	ImageObjectWrites int64 `json:"image_object_writes"`
	ImageStatusWrites int64 `json:"image_status_writes"`
	EventWrites       int64 `json:"event_writes"`
	// Events counts the Events of the run's namespace recorded in the
	// phase, by "Kind Type Reason" (an Event counted as often as it
	// happened).
	Events map[string]int64 `json:"events,omitempty"`

	// Writes lists the writes counted, "VERB resource=count".
	Writes []string `json:"-"`
}

// withImageDefaults checks the settings of an -image run and fills in
// its defaults: one git repository (the monorepo layout) on
// git-http-backend, the server of the two that takes pushes.
func (cfg Config) withImageDefaults() (Config, error) {
	switch {
	case cfg.Kind != "" && cfg.Kind != KindKustomization:
		return cfg, fmt.Errorf("-image measures image automations, not -kind %s", cfg.Kind)
	case cfg.Source != "" && cfg.Source != SourceGit:
		return cfg, fmt.Errorf("-image pushes to a git repository: -source %s, not %q", SourceGit, cfg.Source)
	case cfg.Layout != "" && cfg.Layout != LayoutMonorepo:
		return cfg, fmt.Errorf("-image pushes to one git repository: -layout %s, not %q", LayoutMonorepo, cfg.Layout)
	case cfg.Gate || cfg.Alert:
		return cfg, errors.New("-image runs without -gate and -alert")
	case cfg.ImageTags < 0 || cfg.ImageInterval < 0 || cfg.ImageAutomationInterval < 0:
		return cfg, errors.New("-image-tags and the image intervals must not be negative")
	}
	cfg.Source, cfg.Layout, cfg.GitServer = SourceGit, LayoutMonorepo, GitServerHTTPBackend
	if cfg.ImageTags == 0 {
		cfg.ImageTags = defaultImageTags
	}
	if cfg.ImageTags < 2 {
		return cfg, errors.New("-image-tags must be at least 2: the automations update the files from the first tag to the last")
	}
	if cfg.ImageInterval == 0 {
		cfg.ImageInterval = defaultImageInterval
	}
	if cfg.ImageAutomationInterval == 0 {
		cfg.ImageAutomationInterval = cfg.ImageInterval
	}
	return cfg, nil
}

// imageApps is the appKind of the automations of namespace ns (what a
// cleanup deletes first).
func imageApps(ns string, n int) appKind {
	return appKind{
		ns:         ns,
		kind:       imagev1.ImageUpdateAutomationKind,
		newObject:  func() client.Object { return &imagev1.ImageUpdateAutomation{} },
		newList:    func() client.ObjectList { return &imagev1.ImageUpdateAutomationList{} },
		ready:      isReady,
		applied:    automationPushed,
		describe:   describeReady,
		sourceList: &imagev1.ImagePolicyList{},
		nSources:   n,
	}
}

// measureImage runs the phases of an -image run into res: every pipeline
// pushed, a change of K repositories, a window with nothing changed.
func (r *run) measureImage(ctx context.Context, res *Result) error {
	kit := r.kit.(*imageKit)
	r.apps = imageApps(r.ns, r.cfg.N)
	res.Source = imagev1.ImageRepositoryKind
	ir := &ImageResult{TagsPerRepository: r.cfg.ImageTags, IntervalSeconds: r.cfg.ImageInterval.Seconds(),
		AutomationIntervalSeconds: r.cfg.ImageAutomationInterval.Seconds(), RegistrySetupSeconds: kit.setup.Seconds(),
		ChangedRepositories: max(1, r.cfg.N/10)}
	res.Image = ir
	r.logf("registry filled with %d repositories × %d tags in %.1fs", r.cfg.N, r.cfg.ImageTags, ir.RegistrySetupSeconds)
	if err := r.imageReady(ctx, res, kit); err != nil {
		return err
	}
	var err error
	if ir.ReadySettle, err = r.imageSettle(ctx, kit); err != nil {
		return err
	}
	if err := r.imageChange(ctx, ir, kit); err != nil {
		return err
	}
	res.ChangeToAppliedSeconds = ir.Change.Seconds
	if ir.ChangeSettle, err = r.imageSettle(ctx, kit); err != nil {
		return err
	}
	if err := r.imageNoop(ctx, res, kit); err != nil {
		return err
	}
	if err := r.countImageReady(ctx, ir); err != nil {
		return err
	}
	ir.Warnings, err = r.warnings(ctx)
	return err
}

// hexRun matches what looks like a commit hash or a digest in a message.
var hexRun = regexp.MustCompile(`[0-9a-f]{7,64}`)

// warnings returns the Warning events of the run's namespace, alike
// messages (their hashes aside) counted together, most frequent first.
func (r *run) warnings(ctx context.Context) ([]string, error) {
	var list corev1.EventList
	if err := r.c.List(ctx, &list, client.InNamespace(r.ns), client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return nil, fmt.Errorf("listing the events: %w", err)
	}
	counts := map[string]int64{}
	for _, e := range list.Items {
		msg := hexRun.ReplaceAllString(strings.ReplaceAll(e.Message, "\n", " "), "<hash>")
		counts[e.InvolvedObject.Kind+" "+e.Reason+": "+msg] += max(int64(e.Count), 1)
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		if counts[a] != counts[b] {
			return int(counts[b] - counts[a])
		}
		return strings.Compare(a, b)
	})
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d× %s", counts[k], k))
	}
	return out, nil
}

// imageCounts is what the phases count, at one moment.
type imageCounts struct {
	// requests are the registry's and the git server's, by label.
	requests map[string]int64
	// commits is the number of commits on main.
	commits int
	// served are the API server's requests (see serverRequests).
	served map[string]int64
	// events are the Events of the namespace (see eventCounts).
	events map[string]int64
}

// imageCounts reads the counts now.
func (r *run) imageCounts(ctx context.Context, kit *imageKit) (imageCounts, error) {
	c := imageCounts{requests: kit.Downloads()}
	var err error
	if c.commits, err = kit.commits(); err != nil {
		return c, err
	}
	if c.served, err = serverRequests(ctx, r.restCfg); err != nil {
		return c, err
	}
	c.events, err = r.eventCounts(ctx)
	return c, err
}

// eventCounts tallies the Events of the run's namespace by "Kind Type
// Reason", each as often as it happened.
func (r *run) eventCounts(ctx context.Context) (map[string]int64, error) {
	var list corev1.EventList
	if err := r.c.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
		return nil, fmt.Errorf("listing the events: %w", err)
	}
	out := map[string]int64{}
	for _, e := range list.Items {
		n := max(int64(e.Count), 1)
		if e.Series != nil {
			n = max(n, int64(e.Series.Count))
		}
		out[e.InvolvedObject.Kind+" "+e.Type+" "+e.Reason] += n
	}
	return out, nil
}

// imagePhase returns what happened from a to b, in seconds, leaving out
// own, the benchmark's own writes ("VERB resource" to count).
func imagePhase(a, b imageCounts, seconds float64, own map[string]int64) ImagePhase {
	d := countsDelta(a.requests, b.requests)
	p := ImagePhase{Seconds: seconds, TagListRequests: d[tagLists], ScanPasses: d[scanPasses],
		OtherRegistryRequests: d[registryOther], RegistryDownloads: d[manifestGets] + d[blobGets],
		Commits: b.commits - a.commits, PushAttempts: d[pushAttempts], Pushes: d[pushes],
		Fetches: d[gitFetches], RefListings: d[refListings]}
	p.PushRetries = p.PushAttempts - int64(p.Commits)
	for key, n := range countsDelta(a.events, b.events) {
		if n != 0 {
			if p.Events == nil {
				p.Events = map[string]int64{}
			}
			p.Events[key] = n
		}
	}
	p.countWrites(countsDelta(a.served, b.served), own)
	return p
}

// imageResources are the resources whose writes an ImagePhase counts.
var imageResources = []string{"imagerepositories", "imagepolicies", "imageupdateautomations", "gitrepositories", "events"}

// countWrites counts the writes to imageResources in served (the API
// server's requests of a phase), less own.
func (p *ImagePhase) countWrites(served, own map[string]int64) {
	ours := map[string]int64{}
	for key, n := range served {
		verb, resource, _ := strings.Cut(key, " ")
		base, _, _ := strings.Cut(strings.TrimSuffix(resource, " dry-run"), "/")
		if isWriteVerb(verb) && slices.Contains(imageResources, base) {
			ours[key] = n - own[key]
		}
	}
	var h HelmResult
	h.classifyWrites(ours, nil)
	p.ImageObjectWrites, p.ImageStatusWrites, p.EventWrites = h.NoopTickObjectWrites, h.NoopTickStatusWrites, h.NoopTickEventWrites
	p.Writes = requestDelta(nil, ours)
}

// imageReady creates the GitRepository and every pipeline (the
// ImageRepositories, the ImagePolicies, the automations, workers at a
// time) and waits until every policy elected and every automation pushed
// and is Ready; main must then hold 1+N commits.
func (r *run) imageReady(ctx context.Context, res *Result, kit *imageKit) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	n := r.cfg.N
	var repos, policies, automations []client.Object
	for _, i := range sortedApps(n) {
		repo, policy, automation := kit.imageObjects(r.ns, i, r.cfg.ImageInterval, r.cfg.ImageAutomationInterval)
		repos, policies, automations = append(repos, repo), append(policies, policy), append(automations, automation)
	}
	all := slices.Concat(kit.Sources(r.ns), repos, policies, automations)
	before, err := r.imageCounts(ctx, kit)
	if err != nil {
		return err
	}
	cpu0 := processCPU()
	start := time.Now()
	electedAt, pushedAt := firstTimes{start: start}, firstTimes{start: start}
	elected := make(chan error, 1)
	var electedIn time.Duration
	go func() {
		err := waitAll(ctx, r.c, r.ns, &imagev1.ImagePolicyList{}, n, electedAt.record(policyElected), describeReady)
		electedIn = time.Since(start)
		elected <- err
	}()
	pushed := make(chan error, 1)
	go func() {
		pushed <- waitAll(ctx, r.c, r.ns, &imagev1.ImageUpdateAutomationList{}, n,
			pushedAt.record(func(obj client.Object) bool { return automationPushed(obj) && isReady(obj) }), describeReady)
	}()
	if err := parallel(ctx, len(all), workers, func(i int) error {
		return r.c.Create(ctx, all[i].DeepCopyObject().(client.Object))
	}); err != nil {
		return fmt.Errorf("creating the objects: %w", err)
	}
	r.logf("created %d objects in %.1fs", len(all), time.Since(start).Seconds())
	if err := <-elected; err != nil {
		return r.withOutput(fmt.Errorf("waiting for every ImagePolicy to elect a tag: %w", err))
	}
	if err := <-pushed; err != nil {
		return r.withOutput(fmt.Errorf("waiting for every ImageUpdateAutomation to push: %w", err))
	}
	seconds := time.Since(start).Seconds()
	after, err := r.imageCounts(ctx, kit)
	if err != nil {
		return err
	}
	ir := res.Image
	own := map[string]int64{"POST imagerepositories": int64(n), "POST imagepolicies": int64(n),
		"POST imageupdateautomations": int64(n), "POST gitrepositories": 1}
	ir.Ready = imagePhase(before, after, seconds, own)
	ir.PoliciesElectedSeconds = electedIn.Seconds()
	ir.ElectedQuantiles, ir.PushedQuantiles = electedAt.quantiles(), pushedAt.quantiles()
	res.ReadySeconds = seconds
	res.Details.ReadyCPU = cpuDelta(cpu0, processCPU())
	res.Details.ReadyServerRequests = requestDelta(before.served, after.served)
	res.Details.ReadyDownloads = countsDelta(before.requests, after.requests)
	st, err := r.ctrl.stats()
	if err != nil {
		return err
	}
	res.CPUSeconds = st.CPUSeconds
	if res.APIRequests, _, err = r.ctrl.apiRequests(); err != nil {
		return err
	}
	r.logf("every policy elected in %.2fs, every automation pushed in %.2fs: %s", ir.PoliciesElectedSeconds, seconds, describePhase(ir.Ready))
	return nil
}

// imageSettle waits until every automation has seen the head of main and
// is Ready, and returns what that cost: an automation whose last run
// built on an older head clones once more at its interval, finds nothing
// to change and records the head.
func (r *run) imageSettle(ctx context.Context, kit *imageKit) (ImagePhase, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	before, err := r.imageCounts(ctx, kit)
	if err != nil {
		return ImagePhase{}, err
	}
	start := time.Now()
	head, err := kit.repo.Head(branch)
	if err != nil {
		return ImagePhase{}, err
	}
	if err := waitAll(ctx, r.c, r.ns, &imagev1.ImageUpdateAutomationList{}, r.cfg.N, automationAt(head), describeReady); err != nil {
		return ImagePhase{}, r.withOutput(fmt.Errorf("waiting for every ImageUpdateAutomation to see the head %s: %w", head, err))
	}
	after, err := r.imageCounts(ctx, kit)
	if err != nil {
		return ImagePhase{}, err
	}
	p := imagePhase(before, after, time.Since(start).Seconds(), nil)
	r.logf("every automation at the head in %.2fs: %s", p.Seconds, describePhase(p))
	return p, nil
}

// imageChange tags the image of the first K applications changeTag,
// asks their ImageRepositories to scan, and waits until their automations
// pushed it.
func (r *run) imageChange(ctx context.Context, ir *ImageResult, kit *imageKit) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	k := ir.ChangedRepositories
	var list imagev1.ImageUpdateAutomationList
	if err := r.c.List(ctx, &list, client.InNamespace(r.ns)); err != nil {
		return err
	}
	lastPush := map[string]string{}
	for _, a := range list.Items {
		lastPush[a.Name] = a.Status.LastPushCommit
	}
	before, err := r.imageCounts(ctx, kit)
	if err != nil {
		return err
	}
	start := time.Now()
	changed := map[string]bool{}
	var repos []client.Object
	for i := range k {
		if err := kit.pushChangeTag(ctx, i); err != nil {
			return err
		}
		changed[appName(i)] = true
		repos = append(repos, &imagev1.ImageRepository{})
		repos[i].SetNamespace(r.ns)
		repos[i].SetName(appName(i))
	}
	token := "bench-change-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := requestReconcile(ctx, r.c, repos, token, workers); err != nil {
		return err
	}
	pushedChange := func(obj client.Object) bool {
		a := obj.(*imagev1.ImageUpdateAutomation)
		return changed[a.Name] && a.Status.ObservedPolicies[a.Name].Tag == changeTag && a.Status.LastPushCommit != lastPush[a.Name]
	}
	if err := waitAll(ctx, r.c, r.ns, &imagev1.ImageUpdateAutomationList{}, k, pushedChange, describeReady); err != nil {
		return r.withOutput(fmt.Errorf("waiting for %d automations to push %s: %w", k, changeTag, err))
	}
	after, err := r.imageCounts(ctx, kit)
	if err != nil {
		return err
	}
	ir.Change = imagePhase(before, after, time.Since(start).Seconds(), map[string]int64{"PATCH imagerepositories": int64(k)})
	r.logf("%d repositories changed, their automations pushed in %.2fs: %s", k, ir.Change.Seconds, describePhase(ir.Change))
	return nil
}

// imageNoop counts what a window of 1.2 repository intervals with
// nothing changed costs: every repository scans once or twice (jitter is
// at most 5%), and nothing is committed, downloaded or written, neither
// to the API server nor to the controller's storage (the tag store).
func (r *run) imageNoop(ctx context.Context, res *Result, kit *imageKit) error {
	files0, err := snapshotStorage(r.ctrl.StoragePath)
	if err != nil {
		return err
	}
	before, err := r.imageCounts(ctx, kit)
	if err != nil {
		return err
	}
	st0, api0, err := r.controllerMark()
	if err != nil {
		return err
	}
	cpu0 := processCPU()
	window := r.cfg.ImageInterval + r.cfg.ImageInterval/5
	r.logf("no-op window of %s", window)
	if err := sleep(ctx, window); err != nil {
		return err
	}
	after, err := r.imageCounts(ctx, kit)
	if err != nil {
		return err
	}
	ir := res.Image
	ir.Noop = imagePhase(before, after, window.Seconds(), nil)
	ir.NoopScanPassesPerRepository = float64(ir.Noop.ScanPasses) / float64(r.cfg.N)
	res.NoopTickSeconds = window.Seconds()
	res.Details.NoopCPU = cpuDelta(cpu0, processCPU())
	res.Details.NoopServerRequests = requestDelta(before.served, after.served)
	d := countsDelta(before.requests, after.requests)
	res.NoopTickDownloads = map[string]int64{gitFetches: d[gitFetches], manifestGets: d[manifestGets], blobGets: d[blobGets]}
	if res.Details.NoopWrittenFiles, err = r.writtenSince(files0); err != nil {
		return err
	}
	res.Details.NoopDownloads = sum(res.NoopTickDownloads)
	res.Details.NoopFiles = int64(len(res.Details.NoopWrittenFiles))
	res.NoopTickWrites = res.Details.NoopDownloads + res.Details.NoopFiles + ir.Noop.ImageObjectWrites +
		ir.Noop.ImageStatusWrites + int64(ir.Noop.Commits)
	if err := r.recordNoopController(res, st0, api0); err != nil {
		return err
	}
	r.logf("no-op window: %s; %d files written %s", describePhase(ir.Noop), res.Details.NoopFiles,
		strings.Join(res.Details.NoopWrittenFiles, " "))
	return nil
}

// countImageReady counts the ImageRepositories, ImagePolicies and
// automations Ready at the end of the run.
func (r *run) countImageReady(ctx context.Context, ir *ImageResult) error {
	for _, c := range []struct {
		list client.ObjectList
		dst  *int
	}{
		{&imagev1.ImageRepositoryList{}, &ir.RepositoriesReady},
		{&imagev1.ImagePolicyList{}, &ir.PoliciesReady},
		{&imagev1.ImageUpdateAutomationList{}, &ir.AutomationsReady},
	} {
		if err := r.c.List(ctx, c.list, client.InNamespace(r.ns)); err != nil {
			return err
		}
		items, err := apimeta.ExtractList(c.list)
		if err != nil {
			return err
		}
		*c.dst = 0
		for _, item := range items {
			if isReady(item.(client.Object)) {
				*c.dst++
			}
		}
	}
	return nil
}

// readyObject is an object of the image kinds, as the predicates read it.
type readyObject interface {
	client.Object
	GetConditions() []metav1.Condition
	GetObservedGeneration() int64
}

// isReady reports whether an object's Ready condition is True for its
// current generation.
func isReady(obj client.Object) bool {
	o, ok := obj.(readyObject)
	return ok && o.GetObservedGeneration() == o.GetGeneration() && apimeta.IsStatusConditionTrue(o.GetConditions(), meta.ReadyCondition)
}

// describeReady summarises an object's Ready condition.
func describeReady(obj client.Object) string {
	o, ok := obj.(readyObject)
	if !ok {
		return "not an object with conditions"
	}
	c := apimeta.FindStatusCondition(o.GetConditions(), meta.ReadyCondition)
	if c == nil {
		return "no Ready condition"
	}
	return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
}

// policyElected reports whether an ImagePolicy has elected a tag.
func policyElected(obj client.Object) bool { return obj.(*imagev1.ImagePolicy).Status.LatestRef != nil }

// automationPushed reports whether an automation has pushed a commit.
func automationPushed(obj client.Object) bool {
	return obj.(*imagev1.ImageUpdateAutomation).Status.LastPushCommit != ""
}

// automationAt returns a predicate true once an automation is Ready at
// the commit head of main.
func automationAt(head string) func(client.Object) bool {
	want := branch + "@sha1:" + head
	return func(obj client.Object) bool {
		return obj.(*imagev1.ImageUpdateAutomation).Status.ObservedSourceRevision == want && isReady(obj)
	}
}

// describePhase summarises an ImagePhase for the log and the table.
func describePhase(p ImagePhase) string {
	return fmt.Sprintf("%d scan passes (%d tag lists, %d other registry requests, %d downloads); %d commits, %d push attempts (%d retries), %d fetches, %d ref listings; image writes %d object, %d status, %d events",
		p.ScanPasses, p.TagListRequests, p.OtherRegistryRequests, p.RegistryDownloads, p.Commits, p.PushAttempts, p.PushRetries,
		p.Fetches, p.RefListings, p.ImageObjectWrites, p.ImageStatusWrites, p.EventWrites)
}

// imageRows returns the table rows of an -image run.
func imageRows(ir *ImageResult, n int) [][2]string {
	q := func(v []float64) string {
		if len(v) != 4 {
			return "none"
		}
		return fmt.Sprintf("%.1fs %.1fs %.1fs %.1fs", v[0], v[1], v[2], v[3])
	}
	phase := func(p ImagePhase) string {
		s := fmt.Sprintf("%.2fs: %s", p.Seconds, describePhase(p))
		if len(p.Writes) > 0 {
			s += " (" + strings.Join(firstN(p.Writes, 8), " ") + ")"
		}
		if len(p.Events) > 0 {
			s += "; events: " + formatCounts(p.Events)
		}
		return s
	}
	return [][2]string{
		{"image", fmt.Sprintf("%d repositories × %d tags (registry filled in %.1fs), interval %s, automations every %s, one git repository",
			n, ir.TagsPerRepository, ir.RegistrySetupSeconds, seconds2duration(ir.IntervalSeconds), seconds2duration(ir.AutomationIntervalSeconds))},
		{"  policies elected after (10% 50% 90% 99%)", q(ir.ElectedQuantiles) + fmt.Sprintf(", all in %.2fs", ir.PoliciesElectedSeconds)},
		{"  automations pushed after (10% 50% 90% 99%)", q(ir.PushedQuantiles)},
		{"  ready", phase(ir.Ready)},
		{"  ready settle", phase(ir.ReadySettle)},
		{"  change", fmt.Sprintf("%d repositories tagged %s, ", ir.ChangedRepositories, changeTag) + phase(ir.Change)},
		{"  change settle", phase(ir.ChangeSettle)},
		{"  no-op window", phase(ir.Noop) + fmt.Sprintf("; %.2f scan passes per repository", ir.NoopScanPassesPerRepository)},
		{"  Ready at the end", fmt.Sprintf("%d ImageRepositories, %d ImagePolicies, %d ImageUpdateAutomations", ir.RepositoriesReady,
			ir.PoliciesReady, ir.AutomationsReady)},
		{"  warnings", orNone(strings.Join(firstN(ir.Warnings, 6), " | "))},
	}
}

// seconds2duration turns seconds back into a duration, for the table.
func seconds2duration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
