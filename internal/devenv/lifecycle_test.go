package devenv

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/controlplane"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// startupTimeout bounds the start of a dev run on a loaded machine.
const startupTimeout = 4 * time.Minute

// TestDevLeavesNothingBehind: a dev run killed outright has its control
// plane killed by the kernel, and leaves its files and its record; the
// next run stops what the record names that still runs (here a process
// added to it, as one the kernel did not stop), removes the files and
// says so. When that run's output is a pipe whose reader is gone
// (`windlass dev | tee` after Ctrl-C ended tee), SIGINT still stops it
// cleanly: no process, file or listening port is left.
func TestDevLeavesNothingBehind(t *testing.T) {
	g := NewWithT(t)
	assets, err := testenv.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	cache, tmp := t.TempDir(), t.TempDir()
	env := append(childproc.CleanEnv(), devChildEnv+"=1", controlplane.CacheDirEnv+"="+cache,
		controlplane.AssetsEnv+"="+assets, "TMPDIR="+tmp)

	first := startDev(t, env)
	g.Eventually(first.out.String, startupTimeout, 100*time.Millisecond).Should(ContainSubstring("Windlass dev is running"))
	dead := readRecord(t, cache)
	t.Cleanup(func() { stopAll(dead) })
	g.Expect(childNames(dead)).To(ConsistOf("etcd", "kube-apiserver", "kube-controller-manager"))
	g.Expect(first.cmd.Process.Kill()).To(Succeed())
	g.Expect(first.cmd.Wait()).To(HaveOccurred())
	g.Eventually(func() []string { return running(dead) }, time.Minute, 100*time.Millisecond).Should(BeEmpty(),
		"the kernel kills the control plane of a dead run")
	g.Expect(dead.Kubeconfig).To(BeAnExistingFile(), "left by the killed run")
	leftover := startSleep(t)
	addChild(t, cache, leftover)

	second := startDev(t, env)
	g.Eventually(second.out.String, startupTimeout, 100*time.Millisecond).Should(ContainSubstring("Windlass dev is running"))
	g.Expect(second.out.String()).To(ContainSubstring(fmt.Sprintf(
		"✔ stopped what a previous windlass dev (pid %d) left running: sleep (pid %d); removed its files (%s, %s)\n",
		dead.PID, leftover.Process.Pid, dead.Kubeconfig, filepath.Join(cache, "dev", "run"))))
	g.Expect(leftover.Wait()).To(HaveOccurred(), "killed")
	rec := readRecord(t, cache)
	t.Cleanup(func() { stopAll(rec) })
	host := apiServerHost(t, rec.Kubeconfig)

	second.closeReader()
	g.Expect(second.cmd.Process.Signal(os.Interrupt)).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- second.cmd.Wait() }()
	g.Eventually(exited, 2*time.Minute).Should(Receive(&err))
	g.Expect(err).NotTo(HaveOccurred(), "exits with status 0, not killed by SIGPIPE")
	g.Expect(running(rec)).To(BeEmpty())
	g.Expect(rec.Kubeconfig).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(cache, "dev", "run")).NotTo(BeADirectory())
	g.Expect(os.ReadDir(tmp)).To(BeEmpty(), "no certificate or etcd folder in the temporary folder")
	_, err = net.DialTimeout("tcp", host, 5*time.Second)
	g.Expect(err).To(HaveOccurred(), "nothing listens on the API server's port")
}

// devProcess is a dev run in a child process, its output in a pipe.
type devProcess struct {
	cmd *exec.Cmd
	// reader is the pipe's read end; out what was read from it.
	reader *os.File
	out    childproc.Buffer
}

// startDev runs the test binary as windlass dev with env.
func startDev(t *testing.T, env []string) *devProcess {
	t.Helper()
	g := NewWithT(t)
	r, w, err := os.Pipe()
	g.Expect(err).NotTo(HaveOccurred())
	p := &devProcess{cmd: exec.Command(os.Args[0], "-test.run=^$"), reader: r}
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, w, &p.out
	p.cmd.SysProcAttr = childproc.SysProcAttr()
	g.Expect(p.cmd.Start()).To(Succeed())
	w.Close()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			_, _ = p.out.Write(append(sc.Bytes(), '\n'))
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Signal(os.Interrupt)
			_ = p.cmd.Wait()
		}
		p.closeReader()
	})
	return p
}

// closeReader closes the read end of the output pipe, as when tee ends.
func (p *devProcess) closeReader() { _ = p.reader.Close() }

// readRecord reads the lock's record in the cache folder.
func readRecord(t *testing.T, cache string) Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cache, "dev", "lock"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	r, ok := parseRecord(data)
	NewWithT(t).Expect(ok).To(BeTrue(), "the lock holds a record: %s", data)
	return r
}

// childNames returns the names of the record's children.
func childNames(r Record) []string {
	var names []string
	for _, c := range r.Children {
		names = append(names, c.Name)
	}
	return names
}

// running returns the names of the record's children that still run
// their recorded program.
func running(r Record) []string {
	var names []string
	for _, c := range r.Children {
		if exe, err := processExe(c.PID); err == nil && exe == c.Exe {
			names = append(names, c.Name)
		}
	}
	return names
}

// addChild adds cmd's process to the children in the lock's record.
func addChild(t *testing.T, cache string, cmd *exec.Cmd) {
	t.Helper()
	g := NewWithT(t)
	r := readRecord(t, cache)
	exe, err := processExe(cmd.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	started, err := processStart(cmd.Process.Pid)
	g.Expect(err).NotTo(HaveOccurred())
	r.Children = append(r.Children, Child{Name: "sleep", PID: cmd.Process.Pid, Exe: exe, Started: started})
	data, err := json.Marshal(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(cache, "dev", "lock"), data, 0o600)).To(Succeed())
}

// stopAll kills the record's children that still run, should the test
// fail before the run stops them.
func stopAll(r Record) {
	for _, c := range r.Children {
		if exe, err := processExe(c.PID); err == nil && exe == c.Exe {
			killAndWait(c.PID)
		}
	}
}

// apiServerHost returns the host:port of the API server of a kubeconfig.
func apiServerHost(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	u, err := url.Parse(cfg.Host)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return u.Host
}

// TestDevPathReportsAFailedChangeAndGoesOn: with --path, a broken file is
// reported as not applied at once, with the build's message, and the next
// edit, which fixes it, is committed and applied.
func TestDevPathReportsAFailedChangeAndGoesOn(t *testing.T) {
	g := NewWithT(t)
	assets, err := testenv.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	write := func(name, content string) {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	write("settings.yaml", configMap("one"))
	cache := t.TempDir()
	dev := startDev(t, append(childproc.CleanEnv(), devChildEnv+"=1", devChildPathEnv+"="+dir,
		controlplane.CacheDirEnv+"="+cache, controlplane.AssetsEnv+"="+assets))
	g.Eventually(dev.out.String, startupTimeout, 100*time.Millisecond).Should(ContainSubstring("Windlass dev is running"))
	rec := readRecord(t, cache)
	t.Cleanup(func() { stopAll(rec) })

	write("broken.yaml", "kind: [\n")
	g.Eventually(dev.out.String, 2*time.Minute, 100*time.Millisecond).Should(
		MatchRegexp(`(?m)^✗ did not apply main@sha1:[0-9a-f]{12}: .*broken\.yaml`))

	g.Expect(os.Remove(filepath.Join(dir, "broken.yaml"))).To(Succeed())
	write("settings.yaml", configMap("two"))
	g.Eventually(dev.out.String, 2*time.Minute, 100*time.Millisecond).Should(
		MatchRegexp(`(?s)✗ did not apply .*▸ committed .*✔ applied main@sha1:[0-9a-f]{40}\n`))
	c := kubeClient(t, rec.Kubeconfig)
	g.Eventually(func() map[string]string {
		var cm corev1.ConfigMap
		_ = c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "settings"}, &cm)
		return cm.Data
	}, time.Minute, 100*time.Millisecond).Should(HaveKeyWithValue("value", "two"), "the removal and the edit may be two commits")
}

// configMap is a ConfigMap manifest whose value is value.
func configMap(value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  value: " + value + "\n"
}

// kubeClient returns a client for the cluster of a kubeconfig.
func kubeClient(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}
