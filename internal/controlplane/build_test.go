package controlplane

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// recordedProgress remembers what Build reported.
type recordedProgress struct{ events []string }

func (p *recordedProgress) Building(b Binary, index, total int) {
	p.events = append(p.events, "building "+b.Name)
}

func (p *recordedProgress) Built(b Binary, _ time.Duration, err error) {
	p.events = append(p.events, "built "+b.Name)
}

// TestBuildWritesWhatIsMissing builds the one binary a folder lacks from the
// embedded module (etcd, the quickest), with the real go command, and leaves
// the others alone.
func TestBuildWritesWhatIsMissing(t *testing.T) {
	g := NewWithT(t)
	cache := t.TempDir()
	t.Setenv(CacheDirEnv, cache)
	t.Setenv(AssetsEnv, "")
	dir, err := AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir).To(HavePrefix(filepath.Join(cache, "controlplane", "k8s-"+KubernetesVersion+"-etcd-"+EtcdVersion)))
	g.Expect(Missing(dir)).To(HaveLen(3))

	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
		g.Expect(os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	}
	g.Expect(Missing(dir)).To(Equal([]Binary{Binaries[0]}))

	progress := &recordedProgress{}
	g.Expect(Build(context.Background(), dir, progress)).To(Succeed())
	g.Expect(progress.events).To(Equal([]string{"building etcd", "built etcd"}))
	g.Expect(Missing(dir)).To(BeEmpty())
	out, err := exec.Command(filepath.Join(dir, "etcd"), "--version").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("etcd Version: " + strings.TrimPrefix(EtcdVersion, "v")))
	g.Expect(filepath.Join(dir, "etcd.tmp")).NotTo(BeAnExistingFile())

	// Nothing missing: nothing built, nothing reported.
	progress.events = nil
	g.Expect(Build(context.Background(), dir, progress)).To(Succeed())
	g.Expect(progress.events).To(BeEmpty())
}

// TestBuildWithoutGoSaysWhatIsMissing: no go command on the PATH is an
// error that names Go and the way around it.
func TestBuildWithoutGoSaysWhatIsMissing(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(CacheDirEnv, t.TempDir())
	t.Setenv("PATH", t.TempDir())
	err := Build(context.Background(), t.TempDir(), nil)
	g.Expect(err).To(MatchError(ErrNoGo))
	g.Expect(err.Error()).To(ContainSubstring("needs Go"))
	g.Expect(err.Error()).To(ContainSubstring(AssetsEnv))
}

// TestModuleIsComplete: the embedded module carries go.mod and go.sum, and
// its versions are the ones this package names.
func TestModuleIsComplete(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(writeModule(dir)).To(Succeed())
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(mod)).To(ContainSubstring("k8s.io/kubernetes " + KubernetesVersion))
	g.Expect(string(mod)).To(ContainSubstring("go.etcd.io/etcd/server/v3 " + EtcdVersion))
	for _, f := range []string{"go.sum", "tools.go", "etcd/main.go"} {
		g.Expect(filepath.Join(dir, f)).To(BeAnExistingFile())
	}
}
