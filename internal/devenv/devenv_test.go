package devenv

import (
	"bytes"
	"context"
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

// TestSecondRunSaysOneRuns: the lock names the run that holds it.
func TestSecondRunSaysOneRuns(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	l, err := acquireLock(dir, "/tmp/first.kubeconfig")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = acquireLock(dir, "/tmp/second.kubeconfig")
	g.Expect(err).To(MatchError(ErrAlreadyRunning))
	g.Expect(err.Error()).To(ContainSubstring("kubeconfig /tmp/first.kubeconfig"))
	l.release()
	again, err := acquireLock(dir, "/tmp/second.kubeconfig")
	g.Expect(err).NotTo(HaveOccurred(), "free once released")
	again.release()
}
