package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// What a run measures (-controllers).
const (
	// ControllersWindlass runs `windlass controller` (the default).
	ControllersWindlass = "windlass"
	// ControllersReference runs the reference toolkit's source-controller
	// and kustomize-controller instead, built by hack/reference.sh, against
	// the same control plane, CRDs, git server and workload.
	ControllersReference = "reference"
)

// The reference controllers, in the order they start. Their binaries are
// named after them and their version in hack/reference.sh's folder.
const (
	sourceController    = "source-controller"
	kustomizeController = "kustomize-controller"
)

// withControllers checks cfg.Controllers and fills in its default; with
// ControllersReference it refuses what measures Windlass alone.
func (cfg Config) withControllers() (Config, error) {
	if cfg.Controllers == "" {
		cfg.Controllers = ControllersWindlass
	}
	switch cfg.Controllers {
	case ControllersWindlass:
		return cfg, nil
	case ControllersReference:
		return cfg, cfg.checkOthers("runs source-controller and kustomize-controller with git sources")
	case ControllersNone:
		return cfg, cfg.checkOthers("applies the workload of git sources and Kustomizations itself")
	default:
		return cfg, fmt.Errorf("unknown controllers %q: choose %s, %s or %s", cfg.Controllers, ControllersWindlass, ControllersReference, ControllersNone)
	}
}

// checkOthers refuses, with -controllers reference or none (which does
// what), the flags whose figures come from Windlass alone: the kinds that
// source-controller and kustomize-controller do not serve, its UI, its
// profiles (but for kube-apiserver's under the floor), and the sources
// other than git.
func (cfg Config) checkOthers(does string) error {
	refuse := func(what string) error {
		return fmt.Errorf("-controllers %s %s: %s measures Windlass only", cfg.Controllers, does, what)
	}
	switch {
	case cfg.Kind != "" && cfg.Kind != KindKustomization:
		return refuse("-kind " + cfg.Kind)
	case cfg.Source != "" && cfg.Source != SourceGit:
		return refuse("-source " + cfg.Source)
	case cfg.Gate:
		return refuse("-gate")
	case cfg.Alert:
		return refuse("-alert")
	case cfg.Image:
		return refuse("-image")
	case cfg.UI:
		return refuse("-ui")
	case cfg.ProfileDir != "" && cfg.Controllers != ControllersNone:
		return refuse("-profile")
	case cfg.PprofAddr != "":
		return refuse("-pprof-addr")
	case cfg.KubeconfigViaEnv:
		return fmt.Errorf("-kubeconfig-via-env is a diagnostic of windlass's flags: -controllers %s runs no windlass", cfg.Controllers)
	}
	return nil
}

// referenceBinary is one reference controller's binary.
type referenceBinary struct {
	// Name is sourceController or kustomizeController.
	Name string
	// Version is the module version hack/reference/go.mod pins.
	Version string
	// Path is the binary.
	Path string
}

// build makes the binaries of controllers: windlass from this checkout
// into the cluster's folder (as the image does when asImage, see
// buildWindlass), or the reference controllers with hack/reference.sh
// (once, into its cache folder), reporting to logw.
func (cl *Cluster) build(controllers string, asImage bool, logw io.Writer) error {
	if controllers == ControllersNone {
		return nil
	}
	if controllers != ControllersReference {
		var err error
		cl.Bin, err = buildWindlass(testenv.RepoRoot(), cl.dir, asImage)
		return err
	}
	bins, err := referenceBinaries(testenv.RepoRoot(), logw)
	cl.Reference = bins
	return err
}

// referenceBinaries returns the reference controllers' binaries that
// hack/reference.sh --list names, running the script to build them when
// one is missing.
func referenceBinaries(root string, logw io.Writer) ([]referenceBinary, error) {
	script := filepath.Join(root, "hack", "reference.sh")
	out, err := exec.Command(script, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", script, err)
	}
	bins, err := referenceBinariesOf(string(out))
	if err != nil {
		return nil, err
	}
	if missingBinary(bins) {
		fmt.Fprintf(logw, "bench: the reference controllers are not built: running %s (once, about ten minutes; go.mod in hack/reference pins them)\n", script)
		cmd := exec.Command(script)
		cmd.Stdout, cmd.Stderr = logw, logw
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("building the reference controllers with %s: %w", script, err)
		}
	}
	return bins, nil
}

// referenceBinariesOf reads the listing of hack/reference.sh --list, a
// path per line whose base is NAME-VERSION, in the order the controllers
// start: source-controller, then kustomize-controller.
func referenceBinariesOf(listing string) ([]referenceBinary, error) {
	var bins []referenceBinary
	for _, path := range strings.Fields(listing) {
		name, version, ok := strings.Cut(filepath.Base(path), "-v")
		if !ok {
			return nil, fmt.Errorf("hack/reference.sh --list: %q is not NAME-vVERSION", path)
		}
		bins = append(bins, referenceBinary{Name: name, Version: "v" + version, Path: path})
	}
	if len(bins) != 2 || bins[0].Name != sourceController || bins[1].Name != kustomizeController {
		return nil, fmt.Errorf("hack/reference.sh --list names %v, not %s and %s", bins, sourceController, kustomizeController)
	}
	return bins, nil
}

// missingBinary reports whether a binary of bins is not there.
func missingBinary(bins []referenceBinary) bool {
	for _, b := range bins {
		if _, err := os.Stat(b.Path); err != nil {
			return true
		}
	}
	return false
}

// referenceProc is how one reference controller runs: its binary, its
// loopback addresses and, for source-controller, its artifact storage.
type referenceProc struct {
	bin                     referenceBinary
	metricsAddr, healthAddr string
	// storagePath and storageAddr are source-controller's artifact folder
	// and the address it serves them on (and advertises in the sources'
	// status, where kustomize-controller downloads them).
	storagePath, storageAddr string
}

// args are the command-line arguments of p: every namespace watched, no
// leader election, errors-only logs, its servers on loopback, and
// --concurrent only when concurrent is set (their defaults otherwise).
// They have no --kubeconfig flag: controller-runtime reads $KUBECONFIG.
func (p referenceProc) args(concurrent int) []string {
	args := []string{
		"--watch-all-namespaces=true",
		"--enable-leader-election=false",
		"--metrics-addr=" + p.metricsAddr,
		"--health-addr=" + p.healthAddr,
		"--log-level=error",
	}
	if p.bin.Name == sourceController {
		args = append(args,
			"--storage-path="+p.storagePath,
			"--storage-addr="+p.storageAddr,
			"--storage-adv-addr="+p.storageAddr)
	}
	if concurrent > 0 {
		args = append(args, "--concurrent="+strconv.Itoa(concurrent))
	}
	return args
}

// referenceRun is what a -controllers reference run keeps about its
// processes, to report them (see finish).
type referenceRun struct {
	procs []*controller
	bins  []referenceBinary
	// concurrent are the workers of each, by name: -concurrent, or the
	// default its -h states.
	concurrent map[string]int
	// startupCPU is each one's CPU seconds once ready, by name.
	startupCPU map[string]float64
	// peakRSS reports the largest sum of their VmRSS sampled.
	peakRSS func() int64
}

// startReference starts source-controller, then kustomize-controller,
// against the cluster as the ServiceAccount windlass runs as, and waits
// until both are ready. r.ctrl is source-controller, with
// kustomize-controller in its group: its figures are their sums.
func (r *run) startReference(ctx context.Context, cl *Cluster, tmp string) error {
	if len(cl.Reference) == 0 {
		return errors.New("the cluster was not started for the reference controllers")
	}
	ref := &referenceRun{bins: cl.Reference, concurrent: map[string]int{}, startupCPU: map[string]float64{}}
	for _, b := range cl.Reference {
		p, err := r.startReferenceProc(b, cl.Kubeconfig, tmp)
		if err != nil {
			for _, q := range ref.procs {
				q.stop(10 * time.Second)
			}
			return err
		}
		ref.procs = append(ref.procs, p)
		ref.concurrent[b.Name] = r.cfg.Concurrent
		if r.cfg.Concurrent < 1 {
			ref.concurrent[b.Name] = defaultConcurrent(b.Path)
		}
	}
	r.ctrl = ref.procs[0]
	r.ctrl.group = ref.procs[1:]
	r.ref = ref
	if err := r.ctrl.waitReady(ctx, time.Minute); err != nil {
		r.ctrl.stop(10 * time.Second)
		return r.withOutput(err)
	}
	for i, p := range ref.procs {
		st, err := p.procStats()
		if err != nil {
			return err
		}
		ref.startupCPU[ref.bins[i].Name] = st.CPUSeconds
	}
	ref.peakRSS = r.ctrl.samplePeak(ctx, 100*time.Millisecond, func(s procStats) int64 { return s.RSSBytes })
	return nil
}

// startReferenceProc starts the reference controller b against the
// cluster of kubeconfig, with its servers on free loopback ports and, for
// source-controller, its storage in tmp.
func (r *run) startReferenceProc(b referenceBinary, kubeconfig, tmp string) (*controller, error) {
	addrs, err := childproc.FreeAddrs(3)
	if err != nil {
		return nil, err
	}
	p := referenceProc{bin: b, metricsAddr: addrs[0], healthAddr: addrs[1]}
	c := &controller{MetricsAddr: p.metricsAddr, HealthAddr: p.healthAddr, name: b.Name}
	if b.Name == sourceController {
		p.storagePath, p.storageAddr = filepath.Join(tmp, "storage"), addrs[2]
		c.StoragePath, c.StorageAddr = p.storagePath, p.storageAddr
		// source-controller refuses a storage folder that does not exist.
		if err := os.MkdirAll(p.storagePath, 0o755); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(b.Path, p.args(r.cfg.Concurrent)...)
	// Only $KUBECONFIG decides which cluster is used.
	cmd.Env = append(childproc.CleanEnv(), "KUBECONFIG="+kubeconfig)
	if c.Process, err = childproc.Start(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", b.Name, err)
	}
	return c, nil
}

// concurrentDefault finds the default of --concurrent in a -h output.
var concurrentDefault = regexp.MustCompile(`--concurrent int[^\n]*\(default (\d+)\)`)

// defaultConcurrent returns the default of the binary's --concurrent, as
// its -h states it, or 0 when it cannot tell.
func defaultConcurrent(bin string) int {
	// -h exits with status 2 after printing the usage.
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	m := concurrentDefault.FindSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
