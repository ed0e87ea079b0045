package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

func TestReferenceConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		// concurrent is what the defaults make of Concurrent; err the
		// error.
		concurrent int
		err        string
	}{
		{"their default concurrency", Config{N: 1, Controllers: ControllersReference}, 0, ""},
		{"concurrent set", Config{N: 1, Controllers: ControllersReference, Concurrent: 8}, 8, ""},
		{"monorepo", Config{N: 1, Controllers: ControllersReference, Layout: LayoutMonorepo}, 0, ""},
		{"git named", Config{N: 1, Controllers: ControllersReference, Source: SourceGit}, 0, ""},
		{"git server http-backend", Config{N: 1, Controllers: ControllersReference, GitServer: GitServerHTTPBackend}, 0, ""},
		{"unknown controllers", Config{N: 1, Controllers: "argo"}, 0, `unknown controllers "argo"`},
		{"helmrelease", Config{N: 1, Controllers: ControllersReference, Kind: KindHelmRelease}, 0, "-kind helmrelease measures Windlass only"},
		{"oci", Config{N: 1, Controllers: ControllersReference, Source: SourceOCI}, 0, "-source oci measures Windlass only"},
		{"bucket", Config{N: 1, Controllers: ControllersReference, Source: SourceBucket}, 0, "-source bucket measures Windlass only"},
		{"gate", Config{N: 1, Controllers: ControllersReference, Gate: true}, 0, "-gate measures Windlass only"},
		{"alert", Config{N: 1, Controllers: ControllersReference, Alert: true}, 0, "-alert measures Windlass only"},
		{"image", Config{N: 1, Controllers: ControllersReference, Image: true}, 0, "-image measures Windlass only"},
		{"ui", Config{N: 1, Controllers: ControllersReference, UI: true}, 0, "-ui measures Windlass only"},
		{"profile", Config{N: 1, Controllers: ControllersReference, ProfileDir: "/tmp/p"}, 0, "-profile measures Windlass only"},
		{"pprof", Config{N: 1, Controllers: ControllersReference, PprofAddr: "127.0.0.1:6060"}, 0, "-pprof-addr measures Windlass only"},
		{"kubeconfig via env", Config{N: 1, Controllers: ControllersReference, KubeconfigViaEnv: true}, 0, "runs no windlass"},
		{"no app", Config{Controllers: ControllersReference}, 0, "n must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := tc.cfg.withDefaults()
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cfg.Controllers).To(Equal(ControllersReference))
			g.Expect(cfg.Kind).To(Equal(KindKustomization))
			g.Expect(cfg.Source).To(Equal(SourceGit))
			g.Expect(cfg.Concurrent).To(Equal(tc.concurrent))
		})
	}
}

// TestFloorConfig: -controllers none applies as many applications at once
// as windlass does, and refuses what measures Windlass only.
func TestFloorConfig(t *testing.T) {
	g := NewWithT(t)
	cfg, err := Config{N: 1, Controllers: ControllersNone}.withDefaults()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Concurrent).To(Equal(manager.DefaultOptions().Concurrent))
	_, err = Config{N: 1, Controllers: ControllersNone, Kind: KindHelmRelease}.withDefaults()
	g.Expect(err).To(MatchError(ContainSubstring("-controllers none applies the workload of git sources and Kustomizations itself: -kind helmrelease measures Windlass only")))
}

func TestWindlassByDefault(t *testing.T) {
	g := NewWithT(t)
	cfg, err := Config{N: 1}.withDefaults()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Controllers).To(Equal(ControllersWindlass))
	g.Expect(cfg.Concurrent).To(BeNumerically(">", 0))
}

func TestReferenceArgs(t *testing.T) {
	source := referenceProc{bin: referenceBinary{Name: sourceController}, metricsAddr: "127.0.0.1:1", healthAddr: "127.0.0.1:2",
		storagePath: "/tmp/run/storage", storageAddr: "127.0.0.1:3"}
	kustomize := referenceProc{bin: referenceBinary{Name: kustomizeController}, metricsAddr: "127.0.0.1:4", healthAddr: "127.0.0.1:5"}
	common := func(p referenceProc) []string {
		return []string{"--watch-all-namespaces=true", "--enable-leader-election=false",
			"--metrics-addr=" + p.metricsAddr, "--health-addr=" + p.healthAddr, "--log-level=error"}
	}
	storage := []string{"--storage-path=/tmp/run/storage", "--storage-addr=127.0.0.1:3", "--storage-adv-addr=127.0.0.1:3"}
	for _, tc := range []struct {
		name       string
		p          referenceProc
		concurrent int
		want       []string
	}{
		{"source-controller", source, 0, append(common(source), storage...)},
		{"source-controller, concurrent", source, 6, append(append(common(source), storage...), "--concurrent=6")},
		{"kustomize-controller", kustomize, 0, common(kustomize)},
		{"kustomize-controller, concurrent", kustomize, 3, append(common(kustomize), "--concurrent=3")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(tc.p.args(tc.concurrent)).To(Equal(tc.want))
		})
	}
}

func TestReferenceBinariesOf(t *testing.T) {
	g := NewWithT(t)
	bins, err := referenceBinariesOf("/cache/source-controller-v1.9.5\n/cache/kustomize-controller-v1.9.6\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bins).To(Equal([]referenceBinary{
		{Name: sourceController, Version: "v1.9.5", Path: "/cache/source-controller-v1.9.5"},
		{Name: kustomizeController, Version: "v1.9.6", Path: "/cache/kustomize-controller-v1.9.6"},
	}))
	_, err = referenceBinariesOf("/cache/source-controller\n")
	g.Expect(err).To(MatchError(ContainSubstring("is not NAME-vVERSION")))
	_, err = referenceBinariesOf("/cache/kustomize-controller-v1.9.6\n/cache/source-controller-v1.9.5\n")
	g.Expect(err).To(MatchError(ContainSubstring("not source-controller and kustomize-controller")))
}

// TestReferenceScriptLists: the script names the binaries of the versions
// hack/reference/go.mod pins, which referenceBinariesOf reads.
func TestReferenceScriptLists(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command(filepath.Join(testenv.RepoRoot(), "hack", "reference.sh"), "--list").Output()
	g.Expect(err).NotTo(HaveOccurred())
	bins, err := referenceBinariesOf(string(out))
	g.Expect(err).NotTo(HaveOccurred())
	for _, b := range bins {
		g.Expect(b.Version).To(MatchRegexp(`^v\d+\.\d+\.\d+$`))
	}
}

func TestConcurrentDefault(t *testing.T) {
	g := NewWithT(t)
	usage := "      --concurrent int                         The number of concurrent kustomize reconciles. (default 4)\n" +
		"      --concurrent-ssa int                     The number of concurrent server-side apply operations. (default 4)\n"
	m := concurrentDefault.FindStringSubmatch(usage)
	g.Expect(m).To(HaveLen(2))
	g.Expect(m[1]).To(Equal("4"))
	g.Expect(defaultConcurrent("/nonexistent")).To(BeZero())
}
