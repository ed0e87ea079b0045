package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/shard"
)

// The failover phase of a -replicas run (see replicas.go): once the usual
// phases are done, it reads who holds every shared object (the holder of
// the Lease of the bucket its shard.windlass.dev/bucket label names),
// kills (SIGKILL) the replica that holds the most, and times until the
// survivors' own metrics say that a run of theirs left every object it
// held Ready (windlass_reconcile_last_success_timestamp_seconds); then it
// checks that every application
// is Ready again and that no source still advertises an artifact in the
// killed replica's storage.

// failoverPoll is how often the failover phase scrapes the survivors.
// The times of the objects come from the scraped series themselves (each
// object's last success), so the poll bounds only when the phase sees
// the end and the claim mark; each scrape costs the survivors, and the
// machine they share, a few milliseconds per thousand objects.
const failoverPoll = time.Second

// failoverReadyBound bounds the wait, once every object of the killed
// replica is taken over, until every application is Ready again (the
// run's -timeout when shorter). An application still not Ready then is
// reported (NotReady), not an error of the run.
const failoverReadyBound = 2 * time.Minute

// FailoverResult is what the failover phase measured.
type FailoverResult struct {
	// Killed is the replica killed (SIGKILL); Buckets the buckets whose
	// Lease named it just before, and Objects the objects of those
	// buckets, by kind in ObjectsByKind.
	Killed        string         `json:"killed"`
	Buckets       int            `json:"buckets"`
	Objects       int            `json:"objects"`
	ObjectsByKind map[string]int `json:"objects_by_kind"`
	// TakenOverBy counts those objects by the survivor whose metrics got
	// a run that left each Ready first.
	TakenOverBy map[string]int `json:"taken_over_by"`
	// Timeline says when, in seconds from the kill, the survivors'
	// metrics had a run that left Ready the first of its objects, and a
	// half and nine tenths of them; and when the buckets they claimed
	// (windlass_shard_bucket_moves_total{move="claimed"}) had grown by as
	// many as it held (Buckets).
	Timeline FailoverTimeline `json:"timeline"`
	// Requests are the survivors' API requests from the kill until every
	// object was taken over, per object taken over (PerApp, ByKind and
	// ByRequest count per object here, not per application).
	Requests *RequestBudget `json:"requests,omitempty"`
	// Events counts the Events created from the kill until every object
	// was taken over, by "Kind Reason".
	Events map[string]int `json:"events,omitempty"`
	// Downloads counts the content the source server served from the kill
	// until every object was taken over (see sourceKit.Downloads): none
	// while the sources' remotes did not move.
	Downloads map[string]int64 `json:"downloads"`
	// ReconciledBefore counts those of its objects that a survivor's
	// metrics already had a success of before the kill (a handover left
	// behind); they count as taken over once a later one comes.
	ReconciledBefore int `json:"reconciled_by_survivors_before"`
	// ReadySeconds runs from the kill until every application was seen
	// Ready, checked once they were all taken over and the survivors'
	// API requests (but for their Leases) stood still for a second; left
	// out when some were still not Ready failoverReadyBound later:
	// NotReady counts them, and NotReadyExample describes the first by
	// name.
	ReadySeconds    float64 `json:"ready_seconds,omitempty"`
	NotReady        int     `json:"not_ready"`
	NotReadyExample string  `json:"not_ready_example,omitempty"`
	// ArtifactsOnKilled counts the sources whose artifact URL names the
	// killed replica's storage address then (0: their new holders stored
	// them again).
	ArtifactsOnKilled int `json:"artifacts_on_killed"`
	// LeftWithKilled counts the objects whose bucket's Lease still named
	// the killed replica then (0).
	LeftWithKilled int `json:"left_with_killed"`
	// LogErrors counts the lines the survivors logged from the kill until
	// then; LogErrorExample is the first of them.
	LogErrors       int    `json:"log_errors"`
	LogErrorExample string `json:"log_error_example,omitempty"`
	// CPU is the CPU seconds of every process of the run (see processCPU)
	// from the kill until every object was taken over, and
	// ServerRequests the requests the API server served meanwhile, the
	// most first (see requestDelta).
	CPU            map[string]float64 `json:"cpu_seconds_by_process,omitempty"`
	ServerRequests []string           `json:"server_requests,omitempty"`

	// seconds is ReplicasResult.FailoverSeconds, unrounded.
	seconds float64
}

// FailoverTimeline marks the takeover's progress, in seconds from the
// kill (0: not reached while the run looked): ClaimedSeconds marks when
// the survivors had claimed as many buckets as the killed replica held
// (the first poll that saw it), the others when their runs had left Ready
// the first, a half and nine tenths of its objects (from each object's
// last success, as the survivors' metrics time it).
type FailoverTimeline struct {
	FirstSeconds   float64 `json:"first_seconds"`
	HalfSeconds    float64 `json:"half_seconds"`
	NinetySeconds  float64 `json:"ninety_seconds"`
	ClaimedSeconds float64 `json:"claimed_seconds"`
	// ByKind gives, by kind, the seconds from the kill at which the first,
	// a half, nine tenths and the last of its objects were taken over.
	ByKind map[string][4]float64 `json:"by_kind,omitempty"`
}

// markObjects records the first, half and nine tenths marks, and ByKind,
// from the seconds after the kill at which each object
// (Kind/namespace/name) was taken over, and returns the last of them.
func (t *FailoverTimeline) markObjects(takenAt map[string]float64) float64 {
	var all []float64
	seconds := map[string][]float64{}
	for obj, at := range takenAt {
		kind, _, _ := strings.Cut(obj, "/")
		seconds[kind] = append(seconds[kind], at)
		all = append(all, at)
	}
	if len(all) == 0 {
		return 0
	}
	marks := quarterMarks(all)
	t.FirstSeconds, t.HalfSeconds, t.NinetySeconds = marks[0], marks[1], marks[2]
	t.ByKind = map[string][4]float64{}
	for kind, s := range seconds {
		t.ByKind[kind] = quarterMarks(s)
	}
	return slices.Max(all)
}

// quarterMarks sorts s and returns its first, its half and nine tenths
// marks, and its last, rounded.
func quarterMarks(s []float64) [4]float64 {
	slices.Sort(s)
	at := func(q float64) float64 { return round2(s[min(len(s)-1, int(q*float64(len(s))))]) }
	return [4]float64{round2(s[0]), at(0.5), at(0.9), round2(s[len(s)-1])}
}

// markClaimed records, at elapsed seconds (a poll's), when claimed of
// buckets (the survivors' bucket claims since the kill) first reach
// buckets.
func (t *FailoverTimeline) markClaimed(elapsed float64, claimed, buckets int) {
	if claimed >= buckets && t.ClaimedSeconds == 0 {
		t.ClaimedSeconds = round2(elapsed)
	}
}

// unixSeconds is t as the metrics' timestamps give it.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// failoverPhase records the replicas' figures, then kills the one that
// holds the most objects and measures how long the others take to
// reconcile every one of them (see failover), then starts it again and
// measures how it takes its share back (see rejoin). It does nothing with
// one replica.
func (r *run) failoverPhase(ctx context.Context, res *Result) error {
	if r.replicas == nil {
		return nil
	}
	held, err := readHolding(ctx, r.c)
	if err != nil {
		return err
	}
	rr := &ReplicasResult{Count: r.cfg.Replicas, ShardBy: r.cfg.ShardBy, LeaseDurationSeconds: r.cfg.ShardLeaseDuration.Seconds(),
		UnheldObjects: len(heldBy(held.objects, ""))}
	if err := r.recordReplicasHolding(rr, held); err != nil {
		return err
	}
	res.Replicas = rr
	names := make([]string, 0, len(rr.Replicas))
	for _, f := range rr.Replicas {
		names = append(names, f.Name)
	}
	fo, err := r.failover(ctx, mostHeld(held.objects, names), held)
	if err != nil {
		return r.withOutput(err)
	}
	rr.Failover = fo
	rr.FailoverSeconds = round2(fo.seconds)
	r.logf("failover: %s killed holding %d objects in %d buckets; the others reconciled them after %.2fs (lease %s): %s",
		fo.Killed, fo.Objects, fo.Buckets, rr.FailoverSeconds, r.cfg.ShardLeaseDuration, formatInts(fo.TakenOverBy))
	rj, err := r.rejoin(ctx, fo.Killed, held)
	if err != nil {
		return r.withOutput(err)
	}
	rr.Rejoin, rr.RejoinSeconds = rj, rj.Seconds
	r.logf("rejoin: %s started again; its %d buckets handed back after %.2fs, its runs left Ready its %d objects after %.2fs; %d held by two replicas",
		rj.Replica, rj.Buckets, rj.BalancedSeconds, rj.Objects, rj.Seconds, rj.HeldTwice)
	return nil
}

// recordReplicasHolding records each replica's peak memory, held
// objects and buckets (by held), members and bucket moves into rr, before
// the failover.
func (r *run) recordReplicasHolding(rr *ReplicasResult, held holding) error {
	err := r.eachReplica(func(f *ReplicaFigures, p *controller, st procStats, body []byte) error {
		members, _ := sampleValue(body, "windlass_shard_members")
		f.PeakRSSBytes, f.Members, f.BucketMoves = st.PeakRSSBytes, int(members), bucketMoves(body)
		f.HeldObjects, f.HeldBuckets = len(heldBy(held.objects, f.Name)), len(heldBy(held.buckets, f.Name))
		f.LogErrors = logErrors(p.Process.Output())
		rr.PeakRSSSumBytes += st.PeakRSSBytes
		return nil
	})
	if err != nil {
		return err
	}
	rr.Replicas = slices.Clone(r.replicas.figures)
	return nil
}

// failover kills the replica victim, waits until the survivors' metrics
// have a run that left Ready every object that victim held by held (see
// succeededObjects), then checks what it left (see afterFailover).
func (r *run) failover(ctx context.Context, victim string, held holding) (*FailoverResult, error) {
	orphans := heldBy(held.objects, victim)
	fo := &FailoverResult{Killed: victim, Buckets: len(heldBy(held.buckets, victim)), Objects: len(orphans), ObjectsByKind: byKind(orphans)}
	killed, survivors := r.splitReplicas(victim)
	before, err := scrapeSurvivors(survivors)
	if err != nil {
		return nil, err
	}
	baseline := before.succeeded
	fo.ReconciledBefore = len(takenOver(orphans, map[string]map[string]float64{}, baseline))
	loggedBefore := outputLengths(survivors)
	served0 := serverRequestsOrNil(ctx, r.restCfg)
	downloads0 := r.kit.Downloads()
	killedAt := time.Now()
	killed.Kill()
	// After the kill, which reaps it: its CPU then counts as this
	// process's reaped children's before and after.
	cpu0 := processCPU()
	profiled := r.profileFailover(ctx, survivors)
	defer profiled()
	wctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	takenAt := map[string]float64{}
	takers, last, err := waitTakenOver(wctx, survivors, orphans, baseline, func(takers map[string]string, scrape survivorsScrape) {
		for obj, by := range takers {
			if _, ok := takenAt[obj]; !ok {
				takenAt[obj] = scrape.succeeded[by][obj] - unixSeconds(killedAt)
			}
		}
		fo.Timeline.markClaimed(time.Since(killedAt).Seconds(), int(scrape.claimed-before.claimed), fo.Buckets)
	})
	if err != nil {
		return nil, err
	}
	fo.seconds = fo.Timeline.markObjects(takenAt)
	fo.Downloads = countsDelta(downloads0, r.kit.Downloads())
	fo.CPU = cpuDelta(cpu0, processCPU())
	fo.ServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, r.restCfg))
	fo.Requests = budget(before.requests, last.requests, nil, len(orphans), "controller")
	if fo.Events, err = r.eventsSince(ctx, killedAt); err != nil {
		return nil, err
	}
	fo.TakenOverBy = countValues(takers)
	if err := settle(ctx, survivors); err != nil {
		return nil, err
	}
	if err := r.afterFailover(ctx, fo, killed, killedAt); err != nil {
		return nil, err
	}
	fo.LogErrors, fo.LogErrorExample = logErrorsSince(survivors, loggedBefore)
	if err := exitedDuring(survivors, "the failover"); err != nil {
		return nil, err
	}
	return fo, nil
}

// outputLengths returns how much each replica of procs has written, by
// name: its own process (r0's Output also holds the others', its group).
func outputLengths(procs map[string]*controller) map[string]int {
	out := make(map[string]int, len(procs))
	for name, p := range procs {
		out[name] = len(p.Process.Output())
	}
	return out
}

// logErrorsSince counts the error lines the replicas of procs wrote after
// the first before[name] bytes of their own process's output, and returns
// the first of them, in name order.
func logErrorsSince(procs map[string]*controller, before map[string]int) (int, string) {
	n, first := 0, ""
	for _, name := range slices.Sorted(maps.Keys(procs)) {
		since := procs[name].Process.Output()[before[name]:]
		n += logErrors(since)
		if first == "" {
			first = firstErrorLine(since)
		}
	}
	return n, first
}

// exitedDuring returns an error naming a replica of procs that has
// exited, during phase.
func exitedDuring(procs map[string]*controller, phase string) error {
	for _, name := range slices.Sorted(maps.Keys(procs)) {
		if p := procs[name]; p.Process.Exited() {
			return fmt.Errorf("replica %s exited during %s: %v", name, phase, p.Process.Err())
		}
	}
	return nil
}

// profileFailover profiles the survivors and kube-apiserver from the
// kill on (failover-<name>.pprof), with -profile; see profileTargets.
func (r *run) profileFailover(ctx context.Context, survivors map[string]*controller) (wait func()) {
	if r.cfg.ProfileDir == "" {
		return func() {}
	}
	addrs := map[string]string{}
	for name, p := range survivors {
		addrs[name] = p.PprofAddr
	}
	profiled := profileTargets(ctx, r.cfg, r.restCfg, "failover-", addrs, r.logf)
	traced := make(chan struct{})
	go func() {
		defer close(traced)
		r.traceFailover(ctx, addrs)
	}()
	return func() { profiled(); <-traced }
}

// traceFailover takes an execution trace of each survivor of addrs over
// failoverTraceSeconds, from failoverTraceLead before the killed replica's
// Lease expires at the latest (failover-<name>.trace in the -profile
// folder): where their workers wait while they take over.
func (r *run) traceFailover(ctx context.Context, addrs map[string]string) {
	if err := sleep(ctx, r.cfg.ShardLeaseDuration-failoverTraceLead); err != nil {
		return
	}
	var wg sync.WaitGroup
	for name, addr := range addrs {
		wg.Go(func() {
			url := fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%d", addr, failoverTraceSeconds)
			file := filepath.Join(r.cfg.ProfileDir, "failover-"+name+".trace")
			hc := &http.Client{Timeout: (failoverTraceSeconds + 30) * time.Second}
			if err := fetchTo(ctx, hc, url, file); err != nil {
				r.logf("tracing %s: %v", name, err)
				return
			}
			r.logf("wrote %s", file)
		})
	}
	wg.Wait()
}

// failoverTraceSeconds is the length of the failover's execution traces,
// and failoverTraceLead how long before the lease's expiry they start:
// the killed replica renewed its Lease up to a fifth of its duration
// before the kill.
const (
	failoverTraceSeconds = 12
	failoverTraceLead    = 3 * time.Second
)

// splitReplicas returns the replica victim and the others, by name.
func (r *run) splitReplicas(victim string) (*controller, map[string]*controller) {
	var killed *controller
	survivors := map[string]*controller{}
	for _, p := range r.replicas.procs {
		if p.name == victim {
			killed = p
		} else {
			survivors[p.name] = p
		}
	}
	return killed, survivors
}

// settle waits until the survivors' API requests, but for their Leases'
// renewals, have stood still for a second (at most settleBound): the runs
// that follow the takeover are then done, and the applications' state is
// what they left.
func settle(ctx context.Context, survivors map[string]*controller) error {
	start := time.Now()
	prev := int64(-1)
	for time.Since(start) < settleBound {
		scrape, err := scrapeSurvivors(survivors)
		if err != nil {
			return err
		}
		cur := requestsButLeases(scrape.requests)
		if cur == prev {
			return nil
		}
		prev = cur
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	return nil
}

// requestsButLeases adds up counts but for the requests on Leases.
func requestsButLeases(counts requestCounts) int64 {
	var n int64
	for k, v := range counts {
		if _, resource, _ := strings.Cut(k, " "); !strings.HasPrefix(resource, "leases") {
			n += v
		}
	}
	return n
}

// afterFailover waits, at most failoverReadyBound, until every
// application is Ready, and records into fo how long that took or how
// many were not, the sources whose artifact is still in the storage of
// killed, and the objects whose bucket's Lease still names it.
func (r *run) afterFailover(ctx context.Context, fo *FailoverResult, killed *controller, killedAt time.Time) error {
	var err error
	if fo.ReadySeconds, fo.NotReady, fo.NotReadyExample, err = r.waitAllReadySince(ctx, killedAt); err != nil {
		return err
	}
	if fo.NotReady > 0 {
		r.logf("after the failover: %d %s not Ready after %.0fs, e.g. %s", fo.NotReady, r.apps.kind,
			time.Since(killedAt).Seconds(), fo.NotReadyExample)
	}
	if fo.ArtifactsOnKilled, err = r.artifactsAt(ctx, killed.StorageAddr); err != nil {
		return err
	}
	after, err := readHolding(ctx, r.c)
	if err != nil {
		return err
	}
	fo.LeftWithKilled = len(heldBy(after.objects, fo.Killed))
	return nil
}

// waitAllReadySince waits, at most failoverReadyBound, until every
// application is Ready, and returns the seconds from since until then, or
// how many were not Ready then and the first of them.
func (r *run) waitAllReadySince(ctx context.Context, since time.Time) (float64, int, string, error) {
	wctx, cancel := context.WithTimeout(ctx, min(failoverReadyBound, r.cfg.ReadyTimeout))
	defer cancel()
	err := waitAll(wctx, r.c, r.apps.ns, r.apps.newList(), r.cfg.N, r.apps.ready, r.apps.describe, r.apps.opts...)
	switch {
	case err == nil:
		return round2(time.Since(since).Seconds()), 0, "", nil
	case ctx.Err() != nil:
		return 0, 0, "", err
	}
	n, example, err := r.notReady(ctx)
	return 0, n, example, err
}

// eventsSince counts the Events of the applications' namespace created
// since since, by "Kind Reason".
func (r *run) eventsSince(ctx context.Context, since time.Time) (map[string]int, error) {
	events, err := eventsBy(ctx, r.c, r.apps.ns, since, func(e corev1.Event) string {
		return e.InvolvedObject.Kind + " " + e.Reason
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(events))
	for k, v := range events {
		out[k] = int(v)
	}
	return out, nil
}

// notReady counts the applications that are not Ready, and describes the
// first by name.
func (r *run) notReady(ctx context.Context) (int, string, error) {
	list := r.apps.newList()
	if err := r.c.List(ctx, list, append([]client.ListOption{client.InNamespace(r.apps.ns)}, r.apps.opts...)...); err != nil {
		return 0, "", err
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return 0, "", err
	}
	n, first, example := 0, "", ""
	for _, item := range items {
		obj := item.(client.Object)
		if r.apps.ready(obj) {
			continue
		}
		n++
		if name := obj.GetNamespace() + "/" + obj.GetName(); first == "" || name < first {
			first, example = name, name+": "+r.apps.describe(obj)
		}
	}
	return n, example, nil
}

// artifactsAt counts the run's sources whose artifact URL names the
// storage address addr.
func (r *run) artifactsAt(ctx context.Context, addr string) (int, error) {
	list := r.kit.NewList()
	if err := r.c.List(ctx, list, client.InNamespace(r.ns)); err != nil {
		return 0, err
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, item := range items {
		a, ok := item.(interface{ GetArtifact() *meta.Artifact })
		if ok && a.GetArtifact() != nil && strings.Contains(a.GetArtifact().URL, "//"+addr+"/") {
			n++
		}
	}
	return n, nil
}

// waitTakenOver scrapes the survivors every failoverPoll until each of
// orphans is taken over (see takenOver), and returns who took each and
// the last scrape. After each scrape it tells progress how many are taken
// over and how many buckets the survivors have claimed so far.
func waitTakenOver(ctx context.Context, survivors map[string]*controller, orphans []string,
	baseline map[string]map[string]float64, progress func(takers map[string]string, scrape survivorsScrape)) (map[string]string, survivorsScrape, error) {
	takers := map[string]string{}
	for {
		scrape, err := scrapeSurvivors(survivors)
		if err != nil {
			return nil, survivorsScrape{}, err
		}
		for obj, by := range takenOver(orphans, baseline, scrape.succeeded) {
			if _, ok := takers[obj]; !ok {
				takers[obj] = by
			}
		}
		progress(takers, scrape)
		if len(takers) == len(orphans) {
			return takers, scrape, nil
		}
		if err := sleep(ctx, failoverPoll); err != nil {
			var left []string
			for _, o := range orphans {
				if _, ok := takers[o]; !ok {
					left = append(left, o)
				}
			}
			return nil, survivorsScrape{}, fmt.Errorf("%d objects of the killed replica not reconciled by another (%s): %w",
				len(left), strings.Join(firstN(left, 5), " "), err)
		}
	}
}

// survivorsScrape is what one scrape of the survivors' metrics read: by
// replica, the objects its runs left Ready (see succeededObjects); the
// buckets they all claimed (see bucketMoves); and their API requests,
// summed.
type survivorsScrape struct {
	succeeded map[string]map[string]float64
	claimed   int64
	requests  requestCounts
}

// The families of the survivors' metrics that the failover phase reads:
// scraping only these spares the survivors, and the machine, the cost of
// their every series while they take over.
const (
	lastSuccessFamily = "windlass_reconcile_last_success_timestamp_seconds"
	bucketMovesFamily = "windlass_shard_bucket_moves_total"
)

// scrapeSurvivors reads the survivors' metrics once.
func scrapeSurvivors(procs map[string]*controller) (survivorsScrape, error) {
	out := survivorsScrape{succeeded: map[string]map[string]float64{}}
	var bodies [][]byte
	for name, p := range procs {
		body, err := p.metricsOf(lastSuccessFamily, bucketMovesFamily, apiRequestsFamily)
		if err != nil {
			return survivorsScrape{}, fmt.Errorf("replica %s: %w", name, err)
		}
		out.succeeded[name] = succeededObjects(body)
		out.claimed += bucketMoves(body)["claimed"]
		bodies = append(bodies, body)
	}
	out.requests = sumAPIRequests(bodies)
	return out, nil
}

// replicasRing is the ring the replicas form: each runs every
// controller.
const replicasRing = "windlass"

// holding is who held what at one time, as the replicas' bucket Leases
// and the shared objects' bucket labels said.
type holding struct {
	// buckets names the holder of each bucket whose Lease names one.
	buckets map[int]string
	// objects names the holder of every shared object, by heldKey (see
	// holdersOf).
	objects map[string]string
}

// readHolding lists the bucket Leases of the replicas' ring once, then
// every shared object, and returns who held what.
func readHolding(ctx context.Context, c client.Client) (holding, error) {
	buckets, err := readBucketHolders(ctx, c)
	if err != nil {
		return holding{}, err
	}
	labels, err := bucketLabels(ctx, c)
	if err != nil {
		return holding{}, err
	}
	return holding{buckets: buckets, objects: holdersOf(labels, buckets)}, nil
}

// readBucketHolders returns the holder of each bucket of the replicas'
// ring, from the Leases in controllerNamespace: their runtime namespace,
// since they run without $RUNTIME_NAMESPACE.
func readBucketHolders(ctx context.Context, c client.Client) (map[int]string, error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(controllerNamespace),
		client.MatchingLabels{shard.RingLabel: replicasRing}); err != nil {
		return nil, fmt.Errorf("listing the bucket Leases in %s: %w", controllerNamespace, err)
	}
	return shard.BucketHolders(leases.Items), nil
}

// bucketLabels returns the bucket label of every object of the kinds the
// replicas share, in every namespace, by heldKey; "" for an object
// without one.
func bucketLabels(ctx context.Context, c client.Client) (map[string]string, error) {
	out := map[string]string{}
	for _, k := range kinds.Where(func(k kinds.Kind) bool { return !k.Static }) {
		list := k.NewList()
		if err := c.List(ctx, list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", k.Kind, err)
		}
		for _, o := range k.Items(list) {
			out[heldKey(k.Kind, o.GetNamespace(), o.GetName())] = o.GetLabels()[shard.BucketLabel]
		}
	}
	return out, nil
}

// holdersOf returns the holder of each object of labels (its bucket label,
// by heldKey): the holder of its bucket by buckets, "" when the label
// names no bucket or the bucket has no holder.
func holdersOf(labels map[string]string, buckets map[int]string) map[string]string {
	out := make(map[string]string, len(labels))
	for obj, value := range labels {
		holder := ""
		if b, ok := shard.ParseBucket(value); ok {
			holder = buckets[b]
		}
		out[obj] = holder
	}
	return out
}

// heldKey names an object as the failover phase keys it.
func heldKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// succeededObjects reads the windlass_reconcile_last_success_timestamp_seconds
// series of a replica's metrics: the objects that one of its runs left
// Ready (and that it did not hand over since), by heldKey, with when the
// last such run ended. A run that only waited (quietly, for an artifact
// stored again after the failover, say) leaves none.
func succeededObjects(body []byte) map[string]float64 {
	out := map[string]float64{}
	forEachSample(body, lastSuccessFamily, func(l map[string]string, v float64) {
		if l["kind"] != "" && l["name"] != "" {
			// The windlass_* series name the object's namespace
			// exported_namespace, as a ServiceMonitor's scrape would.
			out[heldKey(l["kind"], l["exported_namespace"], l["name"])] = v
		}
	})
	return out
}

// bucketMoves reads windlass_shard_bucket_moves_total by move (claimed,
// handed_over): buckets, not objects.
func bucketMoves(body []byte) map[string]int64 {
	out := map[string]int64{}
	forEachSample(body, bucketMovesFamily, func(l map[string]string, v float64) {
		out[l["move"]] += int64(v)
	})
	return out
}

// takenOver returns the objects of orphans that a replica's scrape has a
// series of whose value differs from that replica's baseline (none
// before, or a later success), with the first such replica by name.
func takenOver(orphans []string, baseline, scrapes map[string]map[string]float64) map[string]string {
	out := map[string]string{}
	names := slices.Sorted(maps.Keys(scrapes))
	for _, obj := range orphans {
		for _, name := range names {
			v, ok := scrapes[name][obj]
			if ok && v != baseline[name][obj] {
				out[obj] = name
				break
			}
		}
	}
	return out
}

// heldBy returns the objects, or buckets, that holders says member holds,
// sorted.
func heldBy[K cmp.Ordered](holders map[K]string, member string) []K {
	var out []K
	for obj, h := range holders {
		if h == member {
			out = append(out, obj)
		}
	}
	slices.Sort(out)
	return out
}

// mostHeld returns the member of names that holders names most often, the
// first by name on a tie.
func mostHeld(holders map[string]string, names []string) string {
	counts := countValues(holders)
	best := ""
	for _, name := range slices.Sorted(slices.Values(names)) {
		if best == "" || counts[name] > counts[best] {
			best = name
		}
	}
	return best
}

// countValues counts the values of m.
func countValues(m map[string]string) map[string]int {
	out := map[string]int{}
	for _, v := range m {
		out[v]++
	}
	return out
}

// byKind counts objects by the kind of their heldKey.
func byKind(objs []string) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		kind, _, _ := strings.Cut(o, "/")
		out[kind]++
	}
	return out
}

// round2 rounds to two decimals.
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
