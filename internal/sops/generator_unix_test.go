//go:build unix

package sops

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestIrregularFiles checks that a FIFO is refused without being opened: an
// open would block until a writer appears.
func TestIrregularFiles(t *testing.T) {
	key := newAgeKey(t)
	d := newTestDecryptor(t, map[string][]byte{"age.agekey": key.secret()})

	tests := []struct {
		name string
		run  func(root string) error
	}{
		{"DecryptFile", func(root string) error {
			_, err := d.DecryptFile(filepath.Join(root, "app/fifo.env"), FormatDotenv)
			return err
		}},
		{"DecryptKustomizeSources", func(root string) error {
			_, err := d.DecryptKustomizeSources(root, "app", nil)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFile(t, root, "app/kustomization.yaml", []byte("secretGenerator:\n- name: s\n  envs: [fifo.env]\n"))
			g.Expect(syscall.Mkfifo(filepath.Join(root, "app/fifo.env"), 0o600)).To(Succeed())

			done := make(chan error, 1)
			go func() { done <- tt.run(root) }()
			select {
			case err := <-done:
				g.Expect(err).To(MatchError(ErrIrregularFile))
				g.Expect(err.Error()).To(ContainSubstring("FIFO"))
			case <-time.After(10 * time.Second):
				t.Fatal("reading a FIFO blocked")
			}
		})
	}
}
