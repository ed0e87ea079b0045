package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/windlass-dev/windlass/internal/controlplane"
	"github.com/windlass-dev/windlass/internal/devenv"
)

// runningDev records, in a cache folder of the test's own, a windlass dev
// that runs (this process) with kubeconfig as its cluster's and the log
// fixture as its controllers' log, as windlass dev records itself.
func runningDev(t *testing.T, g *WithT, kubeconfig string) devenv.Record {
	t.Helper()
	t.Setenv(controlplane.CacheDirEnv, t.TempDir())
	log, err := filepath.Abs(logFixture)
	g.Expect(err).NotTo(HaveOccurred())
	rec := devenv.Record{PID: os.Getpid(), Kubeconfig: kubeconfig, Log: log, Version: "v1.2.3"}
	path, err := devenv.RecordPath()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(filepath.Dir(path), 0o700)).To(Succeed())
	data, err := json.Marshal(rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	_, ok := devenv.Running()
	g.Expect(ok).To(BeFalse(), "a record nobody holds the lock of is a run that died")
	lock, err := os.Open(path)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = lock.Close() })
	g.Expect(syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)).To(Succeed())
	running, ok := devenv.Running()
	g.Expect(ok).To(BeTrue())
	g.Expect(running).To(Equal(rec))
	return rec
}

// runWithoutKubeconfig runs the command line with no --kubeconfig.
func runWithoutKubeconfig(args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	root := NewRootCommand(&out, &errOut)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// TestCommandsKnowWindlassDev: on the cluster of windlass dev, version and
// check say that the controllers run in windlass dev, logs reads its log,
// and install refuses unless forced.
func TestCommandsKnowWindlassDev(t *testing.T) {
	g := NewWithT(t)
	dev := runningDev(t, g, kubeconfig)

	out, _, err := run(t, "version")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(fmt.Sprintf("client: %s\ncontroller: v1.2.3 (controllers run in windlass dev, pid %d)\n", Version, dev.PID)))

	out, _, err = run(t, "check")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveSuffix(fmt.Sprintf("► checking the controllers\n"+
		"✔ controllers run in windlass dev (pid %d), not in a Deployment; their log: %s\n✔ all checks passed\n", dev.PID, dev.Log)))

	out, errOut, err := run(t, "logs", "--level", "error")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(errOut).To(Equal(fmt.Sprintf("reading the log of windlass dev (pid %d): %s\n", dev.PID, dev.Log)))
	expectGolden(t, g, "logs-errors", out)

	out, _, err = run(t, "install", "-n", env.CreateNamespace(t))
	g.Expect(err).To(MatchError(fmt.Sprintf("this is the cluster of windlass dev (pid %d): its controllers already run in windlass dev, "+
		"and it has no scheduler or kubelet to run them in a Deployment; nothing to install (--force installs anyway)", dev.PID)))
	g.Expect(out).To(BeEmpty(), "nothing applied")
}

// TestCommandsOnAnotherCluster: a windlass dev that runs another cluster
// changes nothing.
func TestCommandsOnAnotherCluster(t *testing.T) {
	g := NewWithT(t)
	other := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(other, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600)).To(Succeed())
	runningDev(t, g, other)
	out, _, err := run(t, "version", "-n", env.CreateNamespace(t))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveSuffix("controller: not installed\n"))
}

// TestFindingTheCluster: a $KUBECONFIG that names no file is said so, with
// the kubeconfig of the windlass dev that runs when one does; with no
// kubeconfig at all, the one of windlass dev is used.
func TestFindingTheCluster(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	t.Run("a $KUBECONFIG that names no file", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv(controlplane.CacheDirEnv, t.TempDir())
		t.Setenv("KUBECONFIG", missing)
		_, _, err := runWithoutKubeconfig("get", "ks")
		g.Expect(err).To(MatchError(fmt.Sprintf("no cluster to talk to: the file $KUBECONFIG names (%s) does not exist: "+
			"set --kubeconfig or $KUBECONFIG, or start a local cluster with windlass dev", missing)))
	})
	t.Run("a $KUBECONFIG that names an empty file", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv(controlplane.CacheDirEnv, t.TempDir())
		empty := filepath.Join(t.TempDir(), "empty")
		g.Expect(os.WriteFile(empty, nil, 0o600)).To(Succeed())
		t.Setenv("KUBECONFIG", empty)
		_, _, err := runWithoutKubeconfig("get", "ks")
		g.Expect(err).To(MatchError(HavePrefix(fmt.Sprintf("no cluster to talk to: the kubeconfig $KUBECONFIG names (%s) holds no cluster: ", empty))))
	})
	t.Run("a $KUBECONFIG that names no file, while windlass dev runs", func(t *testing.T) {
		g := NewWithT(t)
		dev := runningDev(t, g, kubeconfig)
		t.Setenv("KUBECONFIG", missing)
		_, _, err := runWithoutKubeconfig("get", "ks")
		g.Expect(err).To(MatchError(fmt.Sprintf("no cluster to talk to: the file $KUBECONFIG names (%s) does not exist: "+
			"windlass dev runs (pid %d): export KUBECONFIG=%s", missing, dev.PID, kubeconfig)))
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		withHomeKubeconfig(t, missing)
		t.Setenv(controlplane.CacheDirEnv, t.TempDir())
		t.Setenv("KUBECONFIG", "")
		_, _, err := runWithoutKubeconfig("get", "ks")
		g.Expect(err).To(MatchError(fmt.Sprintf("no cluster to talk to: $KUBECONFIG is not set and %s does not exist: "+
			"set --kubeconfig or $KUBECONFIG, or start a local cluster with windlass dev", missing)))
	})
	t.Run("an empty ~/.kube/config", func(t *testing.T) {
		g := NewWithT(t)
		empty := filepath.Join(t.TempDir(), "config")
		g.Expect(os.WriteFile(empty, nil, 0o600)).To(Succeed())
		withHomeKubeconfig(t, empty)
		t.Setenv(controlplane.CacheDirEnv, t.TempDir())
		t.Setenv("KUBECONFIG", "")
		_, _, err := runWithoutKubeconfig("get", "ks")
		g.Expect(err).To(MatchError(fmt.Sprintf("no cluster to talk to: $KUBECONFIG is not set and %s holds no cluster: "+
			"set --kubeconfig or $KUBECONFIG, or start a local cluster with windlass dev", empty)))
	})
	t.Run("no kubeconfig, while windlass dev runs", func(t *testing.T) {
		g := NewWithT(t)
		withHomeKubeconfig(t, missing)
		dev := runningDev(t, g, kubeconfig)
		t.Setenv("KUBECONFIG", "")
		out, _, err := runWithoutKubeconfig("version")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(ContainSubstring(fmt.Sprintf("controllers run in windlass dev, pid %d", dev.PID)))
	})
}

// withHomeKubeconfig makes path the home kubeconfig (~/.kube/config) of
// the test, whatever the machine has.
func withHomeKubeconfig(t *testing.T, path string) {
	saved := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = path
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = saved })
}
