package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil/browser"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// devStartTimeout bounds how long `windlass dev` may take to be running,
// once the control plane is built.
const devStartTimeout = 3 * time.Minute

// devRun is a running `windlass dev`.
type devRun struct {
	*childproc.Process
	cache, kubeconfig string
	client            client.Client
}

// startDev runs `windlass dev` with args, with a cache folder of its own
// and the built control plane, and waits until it says it is running.
func startDev(t *testing.T, g *WithT, args ...string) *devRun {
	d := &devRun{cache: t.TempDir(), kubeconfig: filepath.Join(t.TempDir(), "kubeconfig")}
	d.Process = d.run(g, append([]string{"--kubeconfig-out", d.kubeconfig}, args...)...)
	t.Cleanup(func() {
		if !d.Exited() {
			d.Kill()
		}
	})
	g.Eventually(func() string {
		if d.Exited() {
			return "exited: " + d.Output()
		}
		return d.Output()
	}, devStartTimeout, interval).Should(ContainSubstring("Windlass dev is running"))
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	d.client, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	return d
}

// run starts `windlass dev` with args against the run's cache folder.
func (d *devRun) run(g *WithT, args ...string) *childproc.Process {
	assets, err := testenv.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(windlassBin, append([]string{"dev"}, args...)...)
	cmd.Env = append(childproc.CleanEnv(), "WINDLASS_CACHE_DIR="+d.cache, "KUBEBUILDER_ASSETS="+assets)
	p, err := childproc.Start(cmd)
	g.Expect(err).NotTo(HaveOccurred())
	return p
}

// TestDev_Demo: `windlass dev` brings up the demo, Ready: two
// Kustomizations chained by dependsOn, a substituted ConfigMap and a
// Deployment that kube-controller-manager rolled out; the web UI it
// prints shows them Ready, in Chromium; SIGTERM stops it.
func TestDev_Demo(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	d := startDev(t, g)
	ctx := context.Background()
	out := d.Output()
	for _, name := range []string{"Gate flux-system/demo-approval", "GitRepository flux-system/dev", "Kustomization flux-system/demo-infrastructure", "Kustomization flux-system/demo-app"} {
		g.Expect(out).To(ContainSubstring("✔ "+name+": "), out)
	}
	var app kustomizev1.Kustomization
	g.Expect(d.client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: "demo-app"}, &app)).To(Succeed())
	g.Expect(app.Spec.DependsOn).To(HaveLen(1))
	g.Expect(conditions.IsTrue(&app, meta.ApprovedCondition)).To(BeTrue(), "the demo gate is open by default")
	var settings corev1.ConfigMap
	g.Expect(d.client.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "settings"}, &settings)).To(Succeed())
	g.Expect(settings.Data).To(HaveKeyWithValue("greeting", "hello from windlass dev"))
	var web appsv1.Deployment
	g.Expect(d.client.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, &web)).To(Succeed())
	g.Expect(web.Status.ObservedGeneration).To(Equal(web.Generation), "kube-controller-manager rolled it out")

	// A newcomer opens the web UI's address that windlass dev printed.
	found := regexp.MustCompile(`Open the web UI: (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(out)
	g.Expect(found).To(HaveLen(2), out)
	tab := browser.New(t)
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(found[1]))).To(Succeed())
	counts, err := browser.Text(tab, browserTimeout, "#counts")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counts).To(MatchRegexp(`Kustomization\s+2\s+2\s`), "two Kustomizations, both Ready")
	g.Expect(browser.Do(tab, browserTimeout, browser.Navigate(found[1]+"object/Kustomization/flux-system/demo-app"))).To(Succeed())
	state, err := browser.Text(tab, browserTimeout, "#state")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(state).To(Equal("Ready"))
	inventory, err := browser.Text(tab, browserTimeout, "#inventory")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inventory).To(ContainSubstring("Deployment/demo/web"))
	g.Expect(d.Terminate(shutdownGrace)).To(Succeed(), d.Output())
}

// TestDev_PathIsFollowedAndCtrlCLeavesNothing: with --path, a change to a
// file in the folder is applied, a removed file is pruned, everything
// listens on loopback only, a second `windlass dev` says that one runs, and
// Ctrl-C leaves no process, listening port or kubeconfig behind.
func TestDev_PathIsFollowedAndCtrlCLeavesNothing(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	writeConfigMap(g, dir, "one", "1")
	d := startDev(t, g, "--path", dir, "--sync-interval", "200ms")
	key := client.ObjectKey{Namespace: "default", Name: "one"}
	g.Expect(configMapValue(ctx, d.client, key)).To(Equal("1"))

	writeConfigMap(g, dir, "one", "2")
	g.Eventually(func() string { return configMapValue(ctx, d.client, key) }, timeout, interval).Should(Equal("2"))
	g.Eventually(d.Output, timeout, interval).Should(ContainSubstring("✔ applied main@sha1:"))

	g.Expect(os.Remove(filepath.Join(dir, "one.yaml"))).To(Succeed())
	writeConfigMap(g, dir, "two", "1")
	g.Eventually(func() string {
		return configMapValue(ctx, d.client, client.ObjectKey{Namespace: "default", Name: "two"})
	},
		timeout, interval).Should(Equal("1"))
	g.Eventually(func() string { return configMapValue(ctx, d.client, key) }, timeout, interval).Should(Equal("<gone>"))

	second := d.run(g)
	g.Eventually(second.Done(), timeout).Should(BeClosed())
	g.Expect(second.Err()).To(HaveOccurred())
	g.Expect(second.Output()).To(ContainSubstring("windlass dev is already running (pid " + strconv.Itoa(d.Pid())))

	pids := append(childPIDs(d.Pid()), d.Pid())
	g.Expect(len(pids)).To(BeNumerically(">=", 4), "etcd, kube-apiserver and kube-controller-manager run under windlass dev")
	listening := listeningAddrs(g, pids)
	g.Expect(listening).NotTo(BeEmpty())
	for _, addr := range listening {
		g.Expect(addr).To(HavePrefix("127.0.0.1:"), "every listener is on loopback: %v", listening)
	}

	g.Expect(d.Signal(syscall.SIGINT)).To(Succeed())
	g.Eventually(d.Done(), shutdownGrace).Should(BeClosed())
	g.Expect(d.Err()).NotTo(HaveOccurred(), d.Output())
	for _, pid := range pids {
		g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "process %d is still running", pid)
	}
	for _, addr := range listening {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		g.Expect(err).To(HaveOccurred(), "%s still accepts connections", addr)
	}
	g.Expect(d.kubeconfig).NotTo(BeAnExistingFile())
}

// writeConfigMap writes dir/name.yaml, a ConfigMap in default with v: value.
func writeConfigMap(g *WithT, dir, name, value string) {
	g.Expect(os.WriteFile(filepath.Join(dir, name+".yaml"), fmt.Appendf(nil,
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\ndata:\n  v: %q\n", name, value), 0o644)).To(Succeed())
}

// configMapValue returns the v key of the ConfigMap, or "<gone>".
func configMapValue(ctx context.Context, c client.Client, key client.ObjectKey) string {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "<gone>"
		}
		return err.Error()
	}
	return cm.Data["v"]
}

// childPIDs returns the processes whose parent is pid.
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var children []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			children = append(children, child)
		}
	}
	return children
}

// listeningAddrs returns the local addresses of the TCP sockets that the
// processes pids listen on, from /proc.
func listeningAddrs(g *WithT, pids []int) []string {
	inodes := map[string]bool{}
	for _, pid := range pids {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err == nil && strings.HasPrefix(target, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
			}
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		g.Expect(err).NotTo(HaveOccurred())
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st ... uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			addrs = append(addrs, decodeProcAddr(fields[1]))
		}
		f.Close()
	}
	return addrs
}

// decodeProcAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080"
// (IPv6 addresses are returned as their hex form, which fails the loopback
// check on purpose).
func decodeProcAddr(s string) string {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	if len(hexIP) != 8 {
		return fmt.Sprintf("[%s]:%d", hexIP, port)
	}
	ip, _ := strconv.ParseUint(hexIP, 16, 32)
	return fmt.Sprintf("%d.%d.%d.%d:%d", byte(ip), byte(ip>>8), byte(ip>>16), byte(ip>>24), port)
}
