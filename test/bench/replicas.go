package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/internal/shard"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// With -replicas N (N > 1) the run starts N `windlass controller`
// processes, r0 to rN-1, with --shards=auto, --shard-name r<i>,
// --shard-by (-shard-by, object by default: the Kustomizations of the
// default layout all live in one namespace) and --shard-lease-duration
// (-shard-lease-duration) and one --storage-adv-addr for all (see
// sharedArtifactsAddr), each with its own ports, artifact storage and
// metrics, all as the one ServiceAccount. r.ctrl is r0, with the others in
// its group: the run's figures (peak_rss_bytes, cpu_seconds,
// api_requests, ready_requests, noop_tick_requests, the no-op tick's
// files) are their sums, and ReplicasResult splits them. After the usual
// phases, the failover phase kills the replica that holds the most
// objects and times until the others have reconciled every one of them,
// and the rejoin phase starts it again and times until it has its share
// back.

// sharedArtifactsAddr is the address the replicas share in their
// artifacts' URLs, as the install's Service: no process listens on it,
// each replica downloads an artifact it lacks from the replica that holds
// the source, at the address that replica's Lease publishes.
const sharedArtifactsAddr = "source-controller.windlass-bench.svc"

// The defaults of -shard-by and -shard-lease-duration.
const (
	defaultShardBy            = "object"
	defaultShardLeaseDuration = 15 * time.Second
)

// ReplicasResult holds the figures of a run with more than one replica.
type ReplicasResult struct {
	// Count is the number of replicas, ShardBy their --shard-by, and
	// LeaseDurationSeconds their --shard-lease-duration.
	Count                int     `json:"count"`
	ShardBy              string  `json:"shard_by"`
	LeaseDurationSeconds float64 `json:"lease_duration_seconds"`
	// Replicas are each replica's figures, r0 first.
	Replicas []ReplicaFigures `json:"replicas"`
	// PeakRSSSumBytes is the sum of their VmHWM before the failover.
	PeakRSSSumBytes int64 `json:"peak_rss_sum_bytes"`
	// UnheldObjects counts the objects of the shared kinds that no
	// replica held before the failover (0): those without a bucket label,
	// or whose bucket's Lease named none.
	UnheldObjects int `json:"unheld_objects"`
	// FailoverSeconds runs from the kill of one replica until the
	// survivors' metrics have a run that left Ready every object it held
	// (Failover).
	FailoverSeconds float64         `json:"failover_seconds"`
	Failover        *FailoverResult `json:"failover"`
	// RejoinSeconds runs from the start of the killed replica again until
	// its metrics have a run that left Ready every object of its share of
	// before the kill (Rejoin).
	RejoinSeconds float64       `json:"rejoin_seconds"`
	Rejoin        *RejoinResult `json:"rejoin,omitempty"`
}

// ReplicaFigures are one replica's figures.
type ReplicaFigures struct {
	Name string `json:"name"`
	// PeakRSSBytes is its VmHWM before the failover.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// StartupCPUSeconds is its CPU time once every replica saw the
	// others, CPUSeconds at the end of the ready phase.
	StartupCPUSeconds float64 `json:"startup_cpu_seconds"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	// APIRequests is its rest_client_requests_total at the end of the
	// ready phase.
	APIRequests int64 `json:"api_requests"`
	// HeldBuckets counts the buckets whose Lease names it and HeldObjects
	// the objects of those buckets (by their bucket label); Members is the
	// windlass_shard_members it reports and BucketMoves its
	// windlass_shard_bucket_moves_total by move (claimed, handed_over): a
	// count of buckets, not objects. All before the failover.
	HeldObjects int              `json:"held_objects"`
	HeldBuckets int              `json:"held_buckets"`
	Members     int              `json:"members"`
	BucketMoves map[string]int64 `json:"bucket_moves"`
	// LogErrors counts the lines it logged (at --log-level error) before
	// the failover.
	LogErrors int `json:"log_errors"`
}

// replicaRun are the replicas of a run and their figures, filled in as
// the phases go.
type replicaRun struct {
	procs   []*controller
	figures []ReplicaFigures
	// bin and kubeconfig start a replica (again, in the rejoin phase).
	bin, kubeconfig string
}

// withReplicas checks -replicas, -shard-by and -shard-lease-duration and
// fills in their defaults; more than one replica measures Windlass
// without the flags that need a single process.
func (cfg Config) withReplicas() (Config, error) {
	if cfg.Replicas < 0 {
		return cfg, errors.New("-replicas must not be negative")
	}
	if cfg.Replicas <= 1 {
		cfg.Replicas = 1
		if cfg.ShardBy != "" || cfg.ShardLeaseDuration != 0 {
			return cfg, errors.New("-shard-by and -shard-lease-duration need -replicas above 1")
		}
		return cfg, nil
	}
	refuse := func(what string) error {
		return fmt.Errorf("-replicas %d does not run with %s", cfg.Replicas, what)
	}
	switch {
	case cfg.Controllers != ControllersWindlass:
		return cfg, refuse("-controllers " + cfg.Controllers)
	case cfg.UI:
		return cfg, refuse("-ui")
	case cfg.Image:
		return cfg, refuse("-image")
	case cfg.PprofAddr != "":
		return cfg, refuse("-pprof-addr")
	}
	if cfg.ShardBy == "" {
		cfg.ShardBy = defaultShardBy
	}
	if _, err := shard.ParseBy(cfg.ShardBy); err != nil {
		return cfg, fmt.Errorf("-shard-by: %w", err)
	}
	if cfg.ShardLeaseDuration == 0 {
		cfg.ShardLeaseDuration = defaultShardLeaseDuration
	}
	if cfg.ShardLeaseDuration < 3*time.Second {
		return cfg, errors.New("-shard-lease-duration must be at least 3s")
	}
	return cfg, nil
}

// replicaName names the i-th replica.
func replicaName(i int) string { return fmt.Sprintf("r%d", i) }

// startReplicas starts the replicas, each with its storage in tmp, and
// waits until each is ready and sees all of them.
func (r *run) startReplicas(ctx context.Context, cl *Cluster, tmp string) error {
	rr := &replicaRun{bin: cl.Bin, kubeconfig: cl.Kubeconfig}
	for i := range r.cfg.Replicas {
		name := replicaName(i)
		p, err := r.startReplica(rr, name, filepath.Join(tmp, "storage-"+name))
		if err != nil {
			for _, q := range rr.procs {
				q.stop(10 * time.Second)
			}
			return err
		}
		rr.procs = append(rr.procs, p)
		rr.figures = append(rr.figures, ReplicaFigures{Name: name})
	}
	r.ctrl, r.replicas = rr.procs[0], rr
	r.ctrl.group = rr.procs[1:]
	err := r.ctrl.waitReady(ctx, time.Minute)
	if err == nil {
		err = r.waitMembers(ctx, time.Minute)
	}
	if err != nil {
		r.ctrl.stop(10 * time.Second)
		return r.withOutput(err)
	}
	for i, p := range rr.procs {
		st, err := p.procStats()
		if err != nil {
			return err
		}
		rr.figures[i].StartupCPUSeconds = st.CPUSeconds
	}
	return nil
}

// startReplica starts the replica name of rr, its artifacts in
// storagePath.
func (r *run) startReplica(rr *replicaRun, name, storagePath string) (*controller, error) {
	pprofAddr, err := r.replicaPprofAddr()
	if err != nil {
		return nil, err
	}
	p, err := startController(rr.bin, rr.kubeconfig, storagePath, r.cfg.Concurrent, pprofAddr,
		r.cfg.KubeconfigViaEnv, r.replicaFlags(name)...)
	if err != nil {
		return nil, err
	}
	p.name = name
	return p, nil
}

// replicaPprofAddr is a free loopback address for a replica's profiles
// with -profile (the failover phase profiles the survivors), else "".
func (r *run) replicaPprofAddr() (string, error) {
	if r.cfg.ProfileDir == "" {
		return "", nil
	}
	addrs, err := childproc.FreeAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// replicaFlags are the flags of the replica name besides startController's.
func (r *run) replicaFlags(name string) []string {
	flags := []string{"--shards=auto", "--shard-name", name, "--shard-by", r.cfg.ShardBy,
		"--shard-lease-duration", r.cfg.ShardLeaseDuration.String(), "--storage-adv-addr", sharedArtifactsAddr}
	if r.cfg.Alert {
		flags = append(flags, "--rate-limit-interval", r.cfg.AlertWindow.String())
	}
	return flags
}

// waitMembers waits until every replica reports all of them as members,
// so that the objects are shared from their creation on.
func (r *run) waitMembers(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		seen, err := membersSeen(r.replicas.procs)
		if err == nil && !slices.ContainsFunc(seen, func(n int) bool { return n != len(seen) }) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replicas do not all see %d members after %s: %v (%v)", len(r.replicas.procs), bound, seen, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// membersSeen returns the windlass_shard_members of each of procs.
func membersSeen(procs []*controller) ([]int, error) {
	var out []int
	for _, p := range procs {
		body, err := p.metrics()
		if err != nil {
			return out, err
		}
		v, _ := sampleValue(body, "windlass_shard_members")
		out = append(out, int(v))
	}
	return out, nil
}

// recordReplicasReady records each replica's CPU time and API requests at
// the end of the ready phase.
func (r *run) recordReplicasReady() error {
	if r.replicas == nil {
		return nil
	}
	return r.eachReplica(func(f *ReplicaFigures, p *controller, st procStats, body []byte) error {
		var err error
		f.CPUSeconds = st.CPUSeconds
		f.APIRequests, _, err = sumRESTRequests(bytes.NewReader(body))
		return err
	})
}

// eachReplica calls fn with each replica's figures, process, process
// statistics and metrics, read now.
func (r *run) eachReplica(fn func(f *ReplicaFigures, p *controller, st procStats, body []byte) error) error {
	for i, p := range r.replicas.procs {
		st, err := p.procStats()
		if err != nil {
			return err
		}
		body, err := p.metrics()
		if err != nil {
			return err
		}
		if err := fn(&r.replicas.figures[i], p, st, body); err != nil {
			return err
		}
	}
	return nil
}

// storagePaths are the artifact folders of the controller processes.
func (r *run) storagePaths() []string {
	var out []string
	for _, p := range r.ctrl.all() {
		if p.StoragePath != "" {
			out = append(out, p.StoragePath)
		}
	}
	return out
}

// snapshotStorages is snapshotStorage of every artifact folder of the run.
func (r *run) snapshotStorages() (map[string]fileState, error) {
	out := map[string]fileState{}
	for _, dir := range r.storagePaths() {
		files, err := snapshotStorage(dir)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, files)
	}
	return out, nil
}

// storageBase is the folder the written files are named relative to: the
// artifact folder, or with several (one per replica) the folder of them.
func (r *run) storageBase() string {
	paths := r.storagePaths()
	if len(paths) == 1 {
		return paths[0]
	}
	return filepath.Dir(paths[0])
}

// formatInts lists counts by name, sorted: "r0=3 r2=4".
func formatInts(m map[string]int) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return orNone(strings.Join(parts, " "))
}

// replicasRows are the table rows of a run with more than one replica.
func replicasRows(rr *ReplicasResult) [][2]string {
	rows := [][2]string{{"replicas", fmt.Sprintf("%d: --shards=auto --shard-by=%s --shard-lease-duration=%s (figures above are their sums)",
		rr.Count, rr.ShardBy, time.Duration(rr.LeaseDurationSeconds*float64(time.Second)))}}
	for _, f := range rr.Replicas {
		moves := make(map[string]int, len(f.BucketMoves))
		for k, v := range f.BucketMoves {
			moves[k] = int(v)
		}
		rows = append(rows, [2]string{"  " + f.Name, fmt.Sprintf(
			"VmHWM %.1f MiB, CPU %.2fs at start-up, %.2fs at ready, %d API requests at ready, holds %d objects in %d buckets, sees %d members, bucket moves %s, %d error lines",
			float64(f.PeakRSSBytes)/(1<<20), f.StartupCPUSeconds, f.CPUSeconds, f.APIRequests, f.HeldObjects, f.HeldBuckets, f.Members,
			formatInts(moves), f.LogErrors)})
	}
	rows = append(rows, [2]string{"  peak RSS, sum of VmHWM", fmt.Sprintf("%.1f MiB (%d objects held by none)",
		float64(rr.PeakRSSSumBytes)/(1<<20), rr.UnheldObjects)})
	if fo := rr.Failover; fo != nil {
		rows = append(rows,
			[2]string{"failover_seconds", fmt.Sprintf("%.2f (killed %s holding %d objects in %d buckets: %s; taken over by %s; lease %gs)",
				rr.FailoverSeconds, fo.Killed, fo.Objects, fo.Buckets, formatInts(fo.ObjectsByKind), formatInts(fo.TakenOverBy), rr.LeaseDurationSeconds)},
			[2]string{"  after the kill", failoverAfterRow(fo)},
			[2]string{"  requests per object taken over", failoverRequestsRow(fo.Requests)},
			[2]string{"  events of the takeover", failoverEventsRow(fo.Events)},
			[2]string{"  downloads of the takeover", formatCounts(fo.Downloads)},
			[2]string{"  CPU seconds by process, takeover", formatCPU(fo.CPU)},
			[2]string{"  API server requests, takeover", strings.Join(firstN(fo.ServerRequests, 12), " ")},
			[2]string{"  timeline", fmt.Sprintf("first run %.2fs, half %.2fs, nine tenths %.2fs; %d buckets claimed %.2fs",
				fo.Timeline.FirstSeconds, fo.Timeline.HalfSeconds, fo.Timeline.NinetySeconds, fo.Buckets, fo.Timeline.ClaimedSeconds)},
			[2]string{"  timeline by kind", kindTimelineRow(fo.Timeline.ByKind)})
	}
	if rj := rr.Rejoin; rj != nil {
		rows = append(rows, rejoinRows(rj)...)
	}
	return rows
}

// kindTimelineRow lists, by kind, when the first, a half, nine tenths and
// the last of its objects were taken over.
func kindTimelineRow(byKind map[string][4]float64) string {
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		t := byKind[kind]
		parts = append(parts, fmt.Sprintf("%s first %.2fs, half %.2fs, nine tenths %.2fs, last %.2fs", kind, t[0], t[1], t[2], t[3]))
	}
	return strings.Join(parts, "; ")
}

// failoverRequestsRow lists the survivors' requests per object taken over.
func failoverRequestsRow(b *RequestBudget) string {
	if b == nil {
		return ""
	}
	return fmt.Sprintf("%.2f: %s", b.PerApp, formatBudget(b.ByRequest))
}

// failoverEventsRow lists the Events of the takeover by kind and reason.
func failoverEventsRow(events map[string]int) string {
	if len(events) == 0 {
		return "none"
	}
	return formatInts(events)
}

// failoverAfterRow describes what the failover left.
func failoverAfterRow(fo *FailoverResult) string {
	ready := fmt.Sprintf("every application Ready after %.2fs", fo.ReadySeconds)
	if fo.NotReady > 0 {
		ready = fmt.Sprintf("%d applications not Ready once the takeover settled, e.g. %s", fo.NotReady, fo.NotReadyExample)
	}
	return fmt.Sprintf("%s; %d sources with their artifact in %s's storage; %d objects whose bucket's Lease still names %s; %d of its objects had a success on a survivor before; the survivors logged %d error lines",
		ready, fo.ArtifactsOnKilled, fo.Killed, fo.LeftWithKilled, fo.Killed, fo.ReconciledBefore, fo.LogErrors) +
		errorExample(fo.LogErrorExample)
}

// errorExample shows line, an error line, after a failover's figures.
func errorExample(line string) string {
	if line == "" {
		return ""
	}
	return "; the first: " + line
}

// firstErrorLine returns the first error line of a replica's output, or
// "".
func firstErrorLine(output string) string {
	for line := range strings.Lines(output) {
		if strings.Contains(line, `"level":"error"`) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// logErrors counts the error lines ("level":"error") of a replica's
// output.
func logErrors(output string) int {
	return strings.Count(output, `"level":"error"`)
}

// outputTail returns the last n bytes of c's output; with a group, the
// last n/len bytes of each process's, under its name.
func outputTail(c *controller, n int) string {
	tail := func(s string, n int) string {
		if len(s) > n {
			return "…" + s[len(s)-n:]
		}
		return s
	}
	if len(c.group) == 0 {
		return tail(c.Process.Output(), n)
	}
	var b strings.Builder
	for _, p := range c.all() {
		state := "running"
		if p.Process.Exited() {
			state = fmt.Sprintf("exited: %v", p.Process.Err())
		}
		fmt.Fprintf(&b, "--- %s (pid %d, %s):\n%s\n", p.name, p.Pid(), state, tail(p.Process.Output(), n/len(c.all())))
	}
	return b.String()
}
