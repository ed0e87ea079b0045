package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	. "github.com/onsi/gomega"
)

// The -image run of the smoke test: small enough for two cores, with a
// repository interval longer than its ready phase should take, and
// automations that tick often, so that they settle quickly.
const (
	smokeImageN        = 5
	smokeImageTags     = 50
	smokeImageInterval = 10 * time.Second
)

// smokeImage runs the benchmark with -image on cl and checks the story
// the issue asks for: one scan pass and one commit per automation to be
// Ready, one commit per changed policy, and a window with nothing changed
// that scans every repository and writes nothing.
func smokeImage(t *testing.T, cl *Cluster) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, cl, Config{N: smokeImageN, Image: true, ImageTags: smokeImageTags, ImageInterval: smokeImageInterval,
		ImageAutomationInterval: 2 * time.Second, ReadyTimeout: time.Minute, Log: t.Output(), Cleanup: true})
	g.Expect(err).NotTo(HaveOccurred())
	printTable(t.Output(), res)

	n := int64(smokeImageN)
	ir := res.Image
	g.Expect(ir).NotTo(BeNil())
	g.Expect(res.Source).To(Equal("ImageRepository"))
	g.Expect(ir.TagsPerRepository).To(Equal(smokeImageTags))
	g.Expect(ir.RepositoriesReady).To(Equal(smokeImageN))
	g.Expect(ir.PoliciesReady).To(Equal(smokeImageN))
	g.Expect(ir.AutomationsReady).To(Equal(smokeImageN))

	// Ready: a commit per automation, a scan per repository at its
	// creation and one more per interval elapsed since (the requeue is
	// jittered by 5% at most); 50 tags are one page each.
	g.Expect(ir.Ready.Commits).To(Equal(smokeImageN), "commits of the ready phase: %s", describePhase(ir.Ready))
	g.Expect(ir.Ready.PushAttempts).To(BeNumerically(">=", n))
	g.Expect(ir.Ready.PushRetries).To(Equal(ir.Ready.PushAttempts - n))
	rescans := math.Ceil(res.ReadySeconds / (0.95 * smokeImageInterval.Seconds()))
	g.Expect(ir.Ready.ScanPasses).To(And(BeNumerically(">=", n), BeNumerically("<=", float64(n)*(1+rescans))),
		"scan passes of the ready phase (%.1fs): %s", res.ReadySeconds, describePhase(ir.Ready))
	g.Expect(ir.Ready.TagListRequests).To(Equal(ir.Ready.ScanPasses), "one page per scan")
	g.Expect(ir.ElectedQuantiles).To(HaveLen(4))
	g.Expect(ir.PushedQuantiles).To(HaveLen(4))
	g.Expect(ir.PoliciesElectedSeconds).To(BeNumerically("<=", res.ReadySeconds))
	g.Expect(ir.ReadySettle.Commits).To(BeZero())

	// Change: one commit per changed policy, after a scan of each
	// changed repository; nothing more once every automation saw it.
	g.Expect(ir.ChangedRepositories).To(Equal(1))
	g.Expect(ir.Change.Commits).To(Equal(1), "commits of the change: %s", describePhase(ir.Change))
	g.Expect(ir.Change.ScanPasses).To(BeNumerically(">=", 1))
	g.Expect(ir.ChangeSettle.Commits).To(BeZero(), "commits after the change: %s", describePhase(ir.ChangeSettle))
	g.Expect(res.ChangeToAppliedSeconds).To(Equal(ir.Change.Seconds))

	// No-op: 1.2 intervals hold one or two scans of each repository, and
	// nothing is committed, downloaded or written.
	g.Expect(ir.Noop.ScanPasses).To(And(BeNumerically(">=", n), BeNumerically("<=", 2*n)), "no-op window: %s", describePhase(ir.Noop))
	g.Expect(ir.Noop.Commits).To(BeZero())
	g.Expect(ir.Noop.Fetches).To(BeZero(), "clones in the no-op window")
	g.Expect(ir.Noop.ImageObjectWrites).To(BeZero(), "writes in the no-op window: %v", ir.Noop.Writes)
	g.Expect(ir.Noop.ImageStatusWrites).To(BeZero(), "writes in the no-op window: %v", ir.Noop.Writes)
	g.Expect(res.Details.NoopWrittenFiles).To(BeEmpty(), "the tag store is not written when the tags did not change")
	g.Expect(ir.Noop.Events).To(BeEmpty(), "events in the no-op window")
	g.Expect(res.NoopTickWrites).To(BeZero())
	g.Expect(res.NoopTickSeconds).To(BeNumerically("~", 1.2*smokeImageInterval.Seconds(), 1e-9))

	data, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	var got map[string]any
	g.Expect(json.Unmarshal(data, &got)).To(Succeed())
	g.Expect(got).To(HaveKeyWithValue("source", "ImageRepository"))
	g.Expect(got).To(HaveKeyWithValue("image", And(
		HaveKeyWithValue("ready", HaveKeyWithValue("commits", BeNumerically("==", smokeImageN))),
		HaveKeyWithValue("change", HaveKeyWithValue("commits", BeNumerically("==", 1))),
		HaveKeyWithValue("noop_tick", HaveKeyWithValue("commits", BeNumerically("==", 0))),
		HaveKeyWithValue("automations_ready", BeNumerically("==", smokeImageN)),
		HaveLen(15))))
}

func TestImageConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		// err is the error expected, "" for none.
		err string
	}{
		{"defaults", Config{N: 1, Image: true}, ""},
		{"git server overridden", Config{N: 1, Image: true, GitServer: GitServerNative}, ""},
		{"helm", Config{N: 1, Image: true, Kind: KindHelmRelease}, "not -kind helmrelease"},
		{"oci", Config{N: 1, Image: true, Source: SourceOCI}, `-source git, not "oci"`},
		{"repo per app", Config{N: 1, Image: true, Layout: LayoutRepoPerApp}, `-layout monorepo, not "repo-per-app"`},
		{"gate", Config{N: 1, Image: true, Gate: true}, "without -gate and -alert"},
		{"one tag", Config{N: 1, Image: true, ImageTags: 1}, "at least 2"},
		{"negative interval", Config{N: 1, Image: true, ImageInterval: -time.Second}, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := tc.cfg.withDefaults()
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Source).To(Equal(SourceGit))
			g.Expect(cfg.Layout).To(Equal(LayoutMonorepo))
			g.Expect(cfg.GitServer).To(Equal(GitServerHTTPBackend), "the native server takes no push")
			g.Expect(cfg.ImageTags).To(Equal(defaultImageTags))
			g.Expect(cfg.ImageInterval).To(Equal(defaultImageInterval))
			g.Expect(cfg.ImageAutomationInterval).To(Equal(defaultImageInterval))
		})
	}
}

func TestClassifyImageRequests(t *testing.T) {
	for _, tc := range []struct {
		name, method, target string
		// registry and git are what classifyImageRequest and
		// classifyGitRequest say of the request.
		registry []string
		git      string
	}{
		{"first tag page", http.MethodGet, "/v2/app-0/tags/list?n=1000", []string{tagLists, scanPasses}, ""},
		{"next tag page", http.MethodGet, "/v2/app-0/tags/list?n=1000&last=1.0.99", []string{tagLists}, ""},
		{"ping", http.MethodGet, "/v2/", []string{registryOther}, ""},
		{"manifest", http.MethodGet, "/v2/app-0/manifests/1.0.0", []string{manifestGets}, ""},
		{"manifest HEAD", http.MethodHead, "/v2/app-0/manifests/1.0.0", []string{registryOther}, ""},
		{"ref listing", http.MethodGet, "/fleet.git/info/refs?service=git-upload-pack", []string{registryOther}, refListings},
		{"fetch", http.MethodPost, "/fleet.git/git-upload-pack", []string{registryOther}, gitFetches},
		{"push attempt", http.MethodGet, "/fleet.git/info/refs?service=git-receive-pack", []string{registryOther}, pushAttempts},
		{"push", http.MethodPost, "/fleet.git/git-receive-pack", []string{registryOther}, pushes},
		{"dumb protocol", http.MethodGet, "/fleet.git/info/refs", []string{registryOther}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := httptest.NewRequest(tc.method, tc.target, nil)
			g.Expect(classifyImageRequest(r)).To(Equal(tc.registry))
			g.Expect(classifyGitRequest(r)).To(Equal(tc.git))
		})
	}
}

func TestImagePhase(t *testing.T) {
	g := NewWithT(t)
	a := imageCounts{commits: 1, requests: map[string]int64{tagLists: 1, scanPasses: 1, pushAttempts: 2},
		served: map[string]int64{"PATCH imagepolicies/status": 3, "GET imagepolicies": 10},
		events: map[string]int64{"ImageUpdateAutomation Warning PushRejected": 1, "ImagePolicy Normal Succeeded": 2}}
	b := imageCounts{commits: 4, requests: map[string]int64{tagLists: 12, scanPasses: 6, registryOther: 5, manifestGets: 1,
		pushAttempts: 7, pushes: 4, gitFetches: 3, refListings: 9},
		served: map[string]int64{"PATCH imagepolicies/status": 8, "GET imagepolicies": 30, "POST imagerepositories": 2,
			"PATCH imageupdateautomations": 1, "POST events": 4, "PATCH leases": 9, "POST configmaps": 1},
		events: map[string]int64{"ImageUpdateAutomation Warning PushRejected": 3, "ImagePolicy Normal Succeeded": 2}}
	p := imagePhase(a, b, 2.5, map[string]int64{"POST imagerepositories": 2})
	g.Expect(p.Writes).To(Equal([]string{"PATCH imagepolicies/status=5", "POST events=4", "PATCH imageupdateautomations=1"}))
	p.Writes = nil
	g.Expect(p).To(Equal(ImagePhase{Seconds: 2.5, TagListRequests: 11, ScanPasses: 5, OtherRegistryRequests: 5, RegistryDownloads: 1,
		Commits: 3, PushAttempts: 5, Pushes: 4, PushRetries: 2, Fetches: 3, RefListings: 9,
		ImageObjectWrites: 1, ImageStatusWrites: 5, EventWrites: 4,
		Events: map[string]int64{"ImageUpdateAutomation Warning PushRejected": 2}}))
}

func TestDeployManifest(t *testing.T) {
	g := NewWithT(t)
	m := deployManifest("bench-x", "127.0.0.1:5000", 7, imageTag(0))
	g.Expect(m).To(ContainSubstring("  name: app-7\n"))
	g.Expect(m).To(ContainSubstring(`image: 127.0.0.1:5000/app-7:1.0.0 # {"$imagepolicy": "bench-x:app-7"}` + "\n"))
	g.Expect(imageAppPath(7)).To(Equal("apps/app-7"))
	g.Expect(semver.MustParse(changeTag).GreaterThan(semver.MustParse(imageTag(999)))).To(BeTrue(), "the change tag is the highest")
}

func TestImageRows(t *testing.T) {
	g := NewWithT(t)
	rows := imageRows(&ImageResult{TagsPerRepository: 1000, IntervalSeconds: 60, AutomationIntervalSeconds: 60, RegistrySetupSeconds: 3.25,
		ChangedRepositories: 10, ElectedQuantiles: []float64{1, 2, 3, 4}, NoopScanPassesPerRepository: 1,
		Noop: ImagePhase{Seconds: 72, ScanPasses: 120, TagListRequests: 120, Writes: []string{"PATCH imagepolicies/status=1"},
			Events: map[string]int64{"ImagePolicy Normal Succeeded": 2}}}, 100)
	g.Expect(rows[0]).To(Equal([2]string{"image",
		"100 repositories × 1000 tags (registry filled in 3.2s), interval 1m0s, automations every 1m0s, one git repository"}))
	g.Expect(rows[1][1]).To(Equal("1.0s 2.0s 3.0s 4.0s, all in 0.00s"))
	g.Expect(rows[2][1]).To(Equal("none"))
	g.Expect(rows[7][1]).To(HavePrefix("72.00s: 120 scan passes (120 tag lists,"))
	g.Expect(rows[9]).To(Equal([2]string{"  warnings", "none"}))
	g.Expect(rows[7][1]).To(HaveSuffix("(PATCH imagepolicies/status=1); events: ImagePolicy Normal Succeeded=2; 1.00 scan passes per repository"))
}
