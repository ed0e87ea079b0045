package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// imageBuildFlags are the flags of `go build` with which `make image`
// builds the binary that ships, with CGO_ENABLED=0 (the version aside).
// They matter to the memory measured: with cgo, the kustomize API's plugin
// loader makes the linker export every symbol and keep every exported
// method, and the binary maps 45 MB more, of which a busy controller keeps
// about 40 MiB resident.
var imageBuildFlags = []string{"-trimpath", "-ldflags", "-s -w"}

// buildWindlass builds ./cmd/windlass of the checkout at root into dir and
// returns the binary's path: as `make image` does when asImage, else as a
// plain `go build` does, which shares its build cache with `go test`.
func buildWindlass(root, dir string, asImage bool) (string, error) {
	bin := filepath.Join(dir, "windlass")
	args := []string{"build", "-o", bin}
	if asImage {
		args = append(args, imageBuildFlags...)
	}
	cmd := exec.Command("go", append(args, "./cmd/windlass")...)
	if asImage {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building windlass: %w\n%s", err, out)
	}
	return bin, syncFile(bin)
}

// syncFile writes the file at path to the disk, so that its cached pages
// are clean, as those of a binary in a container image are: the
// controller evicts its binary's pages from the page cache once started
// (see internal/manager's pageOut), which the kernel refuses for pages not
// yet written.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// controller is a running `windlass controller` child process.
type controller struct {
	*childproc.Process

	// HealthAddr, MetricsAddr and StorageAddr are the loopback host:port
	// addresses the controller serves on; StoragePath is its artifact
	// folder.
	HealthAddr, MetricsAddr, StorageAddr, StoragePath string

	// PprofAddr serves its profiles, when it was started with one.
	PprofAddr string

	// name names the process in Output: the reference controller's name,
	// empty for windlass.
	name string

	// group are the processes measured together with this one, nil for
	// windlass: with -controllers reference, kustomize-controller beside
	// source-controller (see startReference). The figures of stats and
	// apiRequests are then their sums.
	group []*controller
}

// all returns c and the processes of its group.
func (c *controller) all() []*controller {
	return append([]*controller{c}, c.group...)
}

// startController starts bin as `windlass controller` against the cluster
// of kubeconfig, with its storage in storagePath, every server on a free
// loopback port, errors-only logging, providers allowed to post to
// loopback and concurrent workers per kind;
// pprofAddr, when not empty, serves its profiles.
//
// With viaEnv the kubeconfig is passed in $KUBECONFIG rather than with
// --kubeconfig, a diagnostic: the two paths build the client configuration
// differently (see Config.KubeconfigViaEnv). extra are more flags.
func startController(bin, kubeconfig, storagePath string, concurrent int, pprofAddr string, viaEnv bool, extra ...string) (*controller, error) {
	ports, err := childproc.FreeAddrs(5)
	if err != nil {
		return nil, err
	}
	c := &controller{StorageAddr: ports[0], MetricsAddr: ports[1], HealthAddr: ports[2], StoragePath: storagePath, PprofAddr: pprofAddr}
	args := []string{"controller"}
	if !viaEnv {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	cmd := exec.Command(bin, append(args,
		"--storage-path", storagePath,
		"--storage-addr", c.StorageAddr,
		"--metrics-addr", c.MetricsAddr,
		"--health-addr", c.HealthAddr,
		"--receiver-addr", ports[3],
		"--image-tags-addr", ports[4],
		"--log-level", "error",
		"--concurrent", strconv.Itoa(concurrent),
		"--pprof-addr", pprofAddr,
		// The notification sink of -alert listens on loopback.
		"--allow-loopback-addresses",
	)...)
	cmd.Args = append(cmd.Args, extra...)
	// Only the flags decide which cluster is used.
	cmd.Env = childproc.CleanEnv()
	if viaEnv {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	}
	c.Process, err = childproc.Start(cmd)
	return c, err
}

// waitReady waits until GET /readyz on the health address of every process
// of the group answers 200.
func (c *controller) waitReady(ctx context.Context, d time.Duration) error {
	for _, p := range c.all() {
		if err := p.WaitHTTP(ctx, "http://"+p.HealthAddr+"/readyz", d); err != nil {
			return err
		}
	}
	return nil
}

// stop sends SIGTERM, waits up to grace for the process to exit and kills
// it afterwards.
func (c *controller) stop(grace time.Duration) {
	for _, p := range c.all() {
		if !p.Process.Exited() {
			_ = p.Terminate(grace)
		}
	}
}

// procStats are the operating system's figures for a process.
type procStats struct {
	// PeakRSSBytes is VmHWM, the peak resident set size.
	PeakRSSBytes int64
	// CPUSeconds is utime+stime, in seconds.
	CPUSeconds float64
	// RSSAnonBytes is the current anonymous resident memory (the heap and
	// stacks, without the mapped binary).
	RSSAnonBytes int64
	// RSSBytes is the current resident set size, VmRSS.
	RSSBytes int64
}

// processSwap is held for writing while a replica's controller is
// replaced in place by its new process (see run.restart), and for reading
// while stats reads the processes, which the samplers do on goroutines of
// their own.
var processSwap sync.RWMutex

// stats returns the figures of c's process, summed over its group.
func (c *controller) stats() (procStats, error) {
	processSwap.RLock()
	defer processSwap.RUnlock()
	var sum procStats
	for _, p := range c.all() {
		s, err := p.procStats()
		if err != nil {
			return sum, err
		}
		sum.PeakRSSBytes += s.PeakRSSBytes
		sum.CPUSeconds += s.CPUSeconds
		sum.RSSAnonBytes += s.RSSAnonBytes
		sum.RSSBytes += s.RSSBytes
	}
	return sum, nil
}

// procStats reads the process's peak resident memory from
// /proc/<pid>/status and its CPU time from /proc/<pid>/stat. A process that
// is gone, before or between the reads, and any process outside Linux read
// as zeros.
func (c *controller) procStats() (procStats, error) {
	var s procStats
	p, err := procfs.NewProc(c.Pid())
	if err != nil {
		return s, ignoreGone(err)
	}
	status, err := p.NewStatus()
	if err != nil {
		return s, ignoreGone(err)
	}
	stat, err := p.Stat()
	if err != nil {
		return s, ignoreGone(err)
	}
	s.PeakRSSBytes, s.RSSAnonBytes, s.RSSBytes = int64(status.VmHWM), int64(status.RssAnon), int64(status.VmRSS)
	s.CPUSeconds = stat.CPUTime()
	return s, nil
}

// ignoreGone returns err, or nil when it says that a process's files under
// /proc are gone: the process exited and was reaped.
func ignoreGone(err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// sampleAnon reads the process's anonymous resident memory every interval
// until ctx ends, and returns a function that reports the largest value
// seen. VmHWM also counts the pages of the binary itself, which the kernel
// maps from the file; this sampled peak shows the memory the controller
// allocates.
func (c *controller) sampleAnon(ctx context.Context, interval time.Duration) func() int64 {
	return c.samplePeak(ctx, interval, func(s procStats) int64 { return s.RSSAnonBytes })
}

// samplePeak reads stats every interval until ctx ends, and returns a
// function that reports the largest value of figure seen.
func (c *controller) samplePeak(ctx context.Context, interval time.Duration, figure func(procStats) int64) func() int64 {
	var mu sync.Mutex
	var peak int64
	sample := func() {
		if st, err := c.stats(); err == nil {
			mu.Lock()
			peak = max(peak, figure(st))
			mu.Unlock()
		}
	}
	sample()
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			processSwap.RLock()
			exited := c.Done()
			processSwap.RUnlock()
			select {
			case <-ctx.Done():
				return
			case <-exited:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() int64 {
		sample()
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// apiRequests scrapes the /metrics of every process of the group and
// returns the sum of every rest_client_requests_total series, in total and
// by HTTP method.
func (c *controller) apiRequests() (int64, map[string]int64, error) {
	var total int64
	byMethod := map[string]int64{}
	for _, p := range c.all() {
		body, err := p.metrics()
		if err != nil {
			return 0, nil, err
		}
		t, m, err := sumRESTRequests(bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		total += t
		for k, v := range m {
			byMethod[k] += v
		}
	}
	return total, byMethod, nil
}

// metrics returns the controller's /metrics, the Prometheus text
// exposition.
func (c *controller) metrics() ([]byte, error) {
	return c.metricsOf()
}

// metricsOf scrapes the families names of the controller's metrics (all
// with none), which costs a scrape of thousands of objects' series only
// what those families do.
func (c *controller) metricsOf(names ...string) ([]byte, error) {
	query := url.Values{"name": names}.Encode()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + c.MetricsAddr + "/metrics?" + query)
	if err != nil {
		return nil, fmt.Errorf("scraping metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping metrics: %s", resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scraping metrics: %w", err)
	}
	return body, nil
}

// waitRequestsStill waits until the controller's API request count has
// stood still for a second, at most bound, and returns how long it
// waited: the requests that follow a phase (status updates, events) are
// then done.
func (c *controller) waitRequestsStill(ctx context.Context, bound time.Duration) (time.Duration, error) {
	start := time.Now()
	prev, _, err := c.apiRequests()
	if err != nil {
		return 0, err
	}
	for time.Since(start) < bound {
		if err := sleep(ctx, time.Second); err != nil {
			return 0, err
		}
		cur, _, err := c.apiRequests()
		if err != nil {
			return 0, err
		}
		if cur == prev {
			break
		}
		prev = cur
	}
	return time.Since(start), nil
}

// sumRESTRequests sums the rest_client_requests_total samples of a
// Prometheus text exposition, in total and by their method label.
func sumRESTRequests(r io.Reader) (int64, map[string]int64, error) {
	const name = "rest_client_requests_total"
	var total int64
	byMethod := map[string]int64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, nil, fmt.Errorf("parsing %q: %w", line, err)
		}
		method := "?"
		if _, after, ok := strings.Cut(rest, `method="`); ok {
			method, _, _ = strings.Cut(after, `"`)
		}
		total += int64(v)
		byMethod[method] += int64(v)
	}
	return total, byMethod, sc.Err()
}
