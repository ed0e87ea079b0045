package devenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/controlplane"
)

// TestRunSaysWhatIsMissing: without git, or with a --path that is not a
// folder of files, windlass dev stops before it starts anything, and says
// what to do.
func TestRunSaysWhatIsMissing(t *testing.T) {
	t.Setenv(controlplane.CacheDirEnv, t.TempDir())
	file := filepath.Join(t.TempDir(), "file.yaml")
	NewWithT(t).Expect(os.WriteFile(file, []byte("a: 1\n"), 0o644)).To(Succeed())
	tests := []struct {
		name string
		path string
		env  string
		want string
	}{
		{name: "no git", env: t.TempDir(), want: ErrNoGit.Error()},
		{name: "a path that is a file", path: file, want: "is not a folder: point it at the folder of your manifests"},
		{name: "a path that does not exist", path: filepath.Join(t.TempDir(), "missing"), want: "is not a folder"},
		{name: "an empty folder", path: t.TempDir(), want: "has no files: put Kubernetes manifests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			if tt.env != "" {
				t.Setenv("PATH", tt.env)
			}
			var out bytes.Buffer
			err := Run(context.Background(), Options{Out: &out, Path: tt.path})
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(out.String()).To(BeEmpty(), "nothing started")
		})
	}
}

// TestSecondRunSaysOneRuns: the lock names the run that holds it, gives
// the next run the record of the previous one, and is emptied on release.
func TestSecondRunSaysOneRuns(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	first := Record{PID: os.Getpid(), Kubeconfig: "/tmp/first.kubeconfig"}
	l, previous, err := acquireLock(dir, first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(previous).To(BeZero())
	_, _, err = acquireLock(dir, Record{PID: os.Getpid(), Kubeconfig: "/tmp/second.kubeconfig"})
	g.Expect(err).To(MatchError(ErrAlreadyRunning))
	g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("(pid %d, kubeconfig /tmp/first.kubeconfig)", os.Getpid())))
	first.Children = []Child{{Name: "etcd", PID: 1, Exe: "/bin/etcd"}}
	l.write(first)
	l.file.Close() // as when the process dies: the kernel drops the lock, the record stays
	again, previous, err := acquireLock(dir, Record{PID: os.Getpid(), Kubeconfig: "/tmp/second.kubeconfig"})
	g.Expect(err).NotTo(HaveOccurred(), "free once its holder is gone")
	g.Expect(previous).To(Equal(first))
	again.release()
	data, err := os.ReadFile(filepath.Join(dir, "lock"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(BeEmpty(), "a run that stopped leaves nothing to stop")
}

// TestRunningNeedsTheLock: a run is found while it holds the lock, and not
// once it is gone, although its record stays with a live process ID (this
// test's, as a reused ID would be).
func TestRunningNeedsTheLock(t *testing.T) {
	g := NewWithT(t)
	cache := t.TempDir()
	t.Setenv(controlplane.CacheDirEnv, cache)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte("apiVersion: v1\n"), 0o600)).To(Succeed())
	rec := Record{PID: os.Getpid(), Kubeconfig: kubeconfig}
	l, _, err := acquireLock(devDir(cache), rec)
	g.Expect(err).NotTo(HaveOccurred())

	running, ok := Running()
	g.Expect(ok).To(BeTrue())
	g.Expect(running).To(Equal(rec))

	g.Expect(l.file.Close()).To(Succeed()) // the run dies, its record left
	_, ok = Running()
	g.Expect(ok).To(BeFalse())
}
