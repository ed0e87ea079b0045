package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The rejoin phase of a -replicas run, after the failover: it starts the
// killed replica again, with its name, flags and storage folder (as a
// container restarted in its pod), and times until the ring hands it its
// share back (every bucket's Lease names the holder it named before the
// kill: the ring's assignment depends on its members only) and until its
// own metrics have a run that left Ready every object of that share. Then
// it checks, from the replicas' own metrics, that no object is held by two
// of them, and that every application is Ready.

// RejoinResult is what the rejoin phase measured.
type RejoinResult struct {
	// Replica is the replica started again; Buckets and Objects count its
	// share before the kill, which it takes back.
	Replica string `json:"replica"`
	Buckets int    `json:"buckets"`
	Objects int    `json:"objects"`
	// BalancedSeconds runs from its start until every bucket's Lease named
	// the holder it named before the kill; Seconds until its metrics had a
	// run that left Ready every object of its share.
	BalancedSeconds float64 `json:"balanced_seconds"`
	Seconds         float64 `json:"seconds"`
	// Requests are every replica's API requests from its start until the
	// replicas settled, per object of its share (PerApp, ByKind and
	// ByRequest count per object here).
	Requests *RequestBudget `json:"requests,omitempty"`
	// Events counts the Events created meanwhile, by "Kind Reason", and
	// Downloads the content the source server served.
	Events    map[string]int   `json:"events,omitempty"`
	Downloads map[string]int64 `json:"downloads"`
	// HeldTwice counts the objects that two replicas' metrics have a
	// success of once the replicas settled (0: the replicas that handed
	// them over forgot them); HeldTwiceExample names the first.
	HeldTwice        int    `json:"held_twice"`
	HeldTwiceExample string `json:"held_twice_example,omitempty"`
	// BucketsElsewhere counts the buckets whose Lease named another
	// holder than before the kill, then (0).
	BucketsElsewhere int `json:"buckets_elsewhere"`
	// ReadySeconds, NotReady and NotReadyExample are as the failover's,
	// from its start.
	ReadySeconds    float64 `json:"ready_seconds,omitempty"`
	NotReady        int     `json:"not_ready"`
	NotReadyExample string  `json:"not_ready_example,omitempty"`
	// LogErrors counts the lines every replica logged meanwhile;
	// LogErrorExample is the first of them.
	LogErrors       int    `json:"log_errors"`
	LogErrorExample string `json:"log_error_example,omitempty"`
}

// rejoin starts the replica killed by the failover again and measures how
// it takes back its share of before the kill (held).
func (r *run) rejoin(ctx context.Context, victim string, held holding) (*RejoinResult, error) {
	share := heldBy(held.objects, victim)
	rj := &RejoinResult{Replica: victim, Buckets: len(heldBy(held.buckets, victim)), Objects: len(share)}
	killed, others := r.splitReplicas(victim)
	before, err := scrapeSurvivors(others)
	if err != nil {
		return nil, err
	}
	logged := outputLengths(others)
	downloads0 := r.kit.Downloads()
	startedAt := time.Now()
	if err := r.restart(ctx, killed); err != nil {
		return nil, err
	}
	logged[victim] = 0
	wctx, cancel := context.WithTimeout(ctx, r.cfg.ReadyTimeout)
	defer cancel()
	if err := r.waitBalanced(wctx, rj, held.buckets, startedAt); err != nil {
		return nil, err
	}
	if err := r.waitShareRun(wctx, rj, killed, share, startedAt); err != nil {
		return nil, err
	}
	all := maps.Clone(others)
	all[victim] = killed
	if err := settle(ctx, all); err != nil {
		return nil, err
	}
	err = r.afterRejoin(ctx, rj, afterRejoinInput{all: all, before: before, held: held,
		logged: logged, downloads0: downloads0, startedAt: startedAt})
	if err != nil {
		return nil, err
	}
	return rj, nil
}

// restart starts the replica killed again in place: its entry among the
// replicas (and r.ctrl, should it be r0) is the new process from now on.
func (r *run) restart(ctx context.Context, killed *controller) error {
	fresh, err := r.startReplica(r.replicas, killed.name, killed.StoragePath)
	if err != nil {
		return err
	}
	processSwap.Lock()
	fresh.group = killed.group
	*killed = *fresh
	processSwap.Unlock()
	if err := killed.Process.WaitHTTP(ctx, "http://"+killed.HealthAddr+"/readyz", time.Minute); err != nil {
		return r.withOutput(fmt.Errorf("replica %s started again: %w", killed.name, err))
	}
	return nil
}

// waitBalanced waits until every bucket's Lease names its holder of want,
// and records when into rj.
func (r *run) waitBalanced(ctx context.Context, rj *RejoinResult, want map[int]string, startedAt time.Time) error {
	for {
		now, err := readBucketHolders(ctx, r.c)
		if err != nil {
			return err
		}
		if bucketsElsewhere(want, now) == 0 {
			rj.BalancedSeconds = round2(time.Since(startedAt).Seconds())
			return nil
		}
		if err := sleep(ctx, failoverPoll); err != nil {
			return fmt.Errorf("the buckets not handed back to %s: %d still elsewhere: %w",
				rj.Replica, bucketsElsewhere(want, now), err)
		}
	}
}

// waitShareRun scrapes the replica p until its metrics have a success of
// every object of share, and records in rj when the last of them ended.
func (r *run) waitShareRun(ctx context.Context, rj *RejoinResult, p *controller, share []string, startedAt time.Time) error {
	for {
		scrape, err := scrapeSurvivors(map[string]*controller{p.name: p})
		if err != nil {
			return err
		}
		succeeded := scrape.succeeded[p.name]
		missing := 0
		lastAt := 0.0
		for _, obj := range share {
			at, ok := succeeded[obj]
			if !ok {
				missing++
			}
			lastAt = max(lastAt, at)
		}
		if missing == 0 {
			rj.Seconds = round2(max(0, lastAt-unixSeconds(startedAt)))
			return nil
		}
		if err := sleep(ctx, failoverPoll); err != nil {
			return fmt.Errorf("%d objects of its share not reconciled by %s: %w", missing, p.name, err)
		}
	}
}

// afterRejoinInput is what afterRejoin reads: every replica, the others'
// scrape before the restart, the holding before the kill, how much each
// replica had logged and what the source server had served before the
// restart, and when it started.
type afterRejoinInput struct {
	all        map[string]*controller
	before     survivorsScrape
	held       holding
	logged     map[string]int
	downloads0 map[string]int64
	startedAt  time.Time
}

// afterRejoin records the requests, Events, downloads and error lines of
// the rejoin, the objects held twice, the buckets elsewhere, and waits
// until every application is Ready.
func (r *run) afterRejoin(ctx context.Context, rj *RejoinResult, in afterRejoinInput) error {
	scrape, err := scrapeSurvivors(in.all)
	if err != nil {
		return err
	}
	rj.Requests = budget(in.before.requests, scrape.requests, nil, max(rj.Objects, 1), "controller")
	rj.HeldTwice, rj.HeldTwiceExample = heldTwice(scrape.succeeded)
	rj.Downloads = countsDelta(in.downloads0, r.kit.Downloads())
	if rj.Events, err = r.eventsSince(ctx, in.startedAt); err != nil {
		return err
	}
	now, err := readBucketHolders(ctx, r.c)
	if err != nil {
		return err
	}
	rj.BucketsElsewhere = bucketsElsewhere(in.held.buckets, now)
	if rj.ReadySeconds, rj.NotReady, rj.NotReadyExample, err = r.waitAllReadySince(ctx, in.startedAt); err != nil {
		return err
	}
	rj.LogErrors, rj.LogErrorExample = logErrorsSince(in.all, in.logged)
	return exitedDuring(in.all, "the rejoin")
}

// bucketsElsewhere counts the buckets of want whose holder in now is not
// the one want names.
func bucketsElsewhere(want, now map[int]string) int {
	n := 0
	for b, holder := range want {
		if now[b] != holder {
			n++
		}
	}
	return n
}

// heldTwice counts the objects that more than one replica's successes
// (by replica, by object) name, and names the first of them with its
// replicas.
func heldTwice(succeeded map[string]map[string]float64) (int, string) {
	by := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(succeeded)) {
		for obj := range succeeded[name] {
			by[obj] = append(by[obj], name)
		}
	}
	n, example := 0, ""
	for _, obj := range slices.Sorted(maps.Keys(by)) {
		if len(by[obj]) < 2 {
			continue
		}
		n++
		if example == "" {
			example = obj + " (" + strings.Join(by[obj], ", ") + ")"
		}
	}
	return n, example
}

// rejoinRows are the table rows of the rejoin phase.
func rejoinRows(rj *RejoinResult) [][2]string {
	ready := fmt.Sprintf("every application Ready after %.2fs", rj.ReadySeconds)
	if rj.NotReady > 0 {
		ready = fmt.Sprintf("%d applications not Ready once the replicas settled, e.g. %s", rj.NotReady, rj.NotReadyExample)
	}
	return [][2]string{
		{"rejoin_seconds", fmt.Sprintf("%.2f (%s started again, its %d buckets handed back after %.2fs; its runs left Ready its %d objects after %.2fs)",
			rj.Seconds, rj.Replica, rj.Buckets, rj.BalancedSeconds, rj.Objects, rj.Seconds)},
		{"  after the rejoin", fmt.Sprintf("%s; %d objects held by two replicas%s; %d buckets elsewhere than before the kill; the replicas logged %d error lines",
			ready, rj.HeldTwice, exampleOf(rj.HeldTwiceExample), rj.BucketsElsewhere, rj.LogErrors) + errorExample(rj.LogErrorExample)},
		{"  requests per object handed back", failoverRequestsRow(rj.Requests)},
		{"  events of the rejoin", failoverEventsRow(rj.Events)},
		{"  downloads of the rejoin", formatCounts(rj.Downloads)},
	}
}

// exampleOf shows an example after a count, when there is one.
func exampleOf(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
