package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// Security row 37, a full /data: the controller's storage is a file system
// of its own (a 16 MiB tmpfs, mounted in a mount namespace of the
// controller's), filled up. A GitRepository's new revision cannot be
// stored: the source says so (no space left on device), and its last
// artifact stays stored, named by its status and served. Sources of every
// kind created meanwhile say so too (a HelmChart waits for its
// HelmRepository's index). Once space is freed, every one is stored, the
// GitRepository at its new revision.
func TestController_FullStorageKeepsTheLastArtifactAndRecovers(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	const shard = "full-storage"
	storage := t.TempDir()
	g.Expect(os.Mkdir(filepath.Join(storage, "artifacts"), 0o755)).To(Succeed())
	proc, err := startControllerWith(kubeconfig, filepath.Join(storage, "artifacts"), shardLabel+"="+shard, nil,
		onTmpfs(filepath.Join(storage, "artifacts"), "16m"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		proc.Kill()
		if t.Failed() {
			t.Logf("windlass controller output:\n%s", proc.Output())
		}
	})
	// The controller's storage, as the test sees it.
	view := filepath.Join(fmt.Sprintf("/proc/%d/root", proc.Pid()), storage)

	srv := gitserver.NewForTest(t)
	base := srv.MustStartHTTP(t)
	repo := srv.MustInitRepo(t, "full.git", "main")
	rev1 := repo.MustCommit(t, "main", map[string]string{"deploy/a.yaml": configMapYAML(ns, "a")}, "one")
	createSharded(g, shard, &sourcev1.GitRepository{}, gitRepositoryYAML(ns, "full", base+"/full.git"))
	full := sourceObject(sourcev1.GitRepositoryKind, ns, "full")
	before := waitStored(g, full, view, "main@sha1:"+rev1)

	filler := filepath.Join(view, "artifacts", "filler")
	fill(g, filler)
	rev2 := repo.MustCommit(t, "main", map[string]string{"deploy/b.yaml": string(randomBytes(g, 1<<20))}, "two")
	testutil.RequestReconcile(g, env.Client, full, "full")
	objects := createEverySourceKind(t, g, shard, ns)
	for _, obj := range append(objects, full) {
		says := "no space left on device"
		if obj.GetKind() == sourcev1.HelmChartKind {
			says = fmt.Sprintf("HelmRepository '%s/charts' has no artifact yet", ns) // it waits for its index
		}
		g.Eventually(func(g Gomega) string {
			u := obj.DeepCopy()
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), u)).To(Succeed())
			g.Expect(readyStatus(u)).To(Equal("False"))
			return readyMessage(u)
		}, timeout, interval).Should(ContainSubstring(says), "%s %s", obj.GetKind(), obj.GetName())
	}
	got := &sourcev1.GitRepository{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(full), got)).To(Succeed())
	g.Expect(got.Status.Artifact.Revision).To(Equal(before.revision), "the last artifact is still named")
	g.Expect(got.Status.Artifact.Digest).To(Equal(before.digest))
	testutil.Download(g, httpClient, got.Status.Artifact) // and served

	g.Expect(os.Remove(filler)).To(Succeed())
	for _, obj := range objects {
		waitStored(g, obj, view, "")
	}
	waitStored(g, full, view, "main@sha1:"+rev2)
}

// onTmpfs returns a change to a command that runs it in a mount namespace
// of its own (and a user namespace, so that no privilege is needed) where
// dir is a tmpfs of size.
func onTmpfs(dir, size string) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			unshare = "unshare" // the start fails, and says so
		}
		cmd.Args = append([]string{"unshare", "--map-root-user", "--mount", "sh", "-c",
			`mount -t tmpfs -o size="$1" tmpfs "$2" && shift 2 && exec "$@"`, "sh", size, dir, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = unshare
	}
}

// fill writes name until its file system has no space left.
func fill(g *WithT, name string) {
	f, err := os.Create(name)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	_, err = io.Copy(f, zeros{})
	g.Expect(errors.Is(err, syscall.ENOSPC)).To(BeTrue(), "filled up: %v", err)
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
