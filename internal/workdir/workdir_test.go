package workdir

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
)

// useTempDir points $TMPDIR at a fresh folder for t, and removes this
// process's work folder when t ends, so that the next test makes its own.
func useTempDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Cleanup(func() { _ = Remove() })
}

func TestSweepRemovesTheFoldersOfDeadOwnersOnly(t *testing.T) {
	for _, tt := range []struct {
		name string
		// dead owners are killed; live ones still run when Sweep runs.
		dead, live int
		// own makes a folder of this process too.
		own bool
	}{
		{name: "nothing to sweep"},
		{name: "a killed owner's folder goes", dead: 1},
		{name: "live owners keep theirs", live: 2, own: true},
		{name: "the dead go, the live stay", dead: 2, live: 1, own: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			useTempDir(t)
			var dead, live []string
			for range tt.dead {
				p := startOwner(t, g)
				p.kill()
				dead = append(dead, p.dir)
			}
			for range tt.live {
				live = append(live, startOwner(t, g).dir)
			}
			if tt.own {
				tmp, err := MkdirTemp("clone-")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(os.WriteFile(filepath.Join(tmp, "file"), make([]byte, ownerBytes), 0o600)).To(Succeed())
				live = append(live, filepath.Dir(tmp))
			}

			swept, err := Sweep(logr.Discard())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(swept).To(Equal(Swept{Folders: tt.dead, Bytes: int64(tt.dead * ownerBytes)}))
			for _, dir := range dead {
				g.Expect(dir).NotTo(BeAnExistingFile(), "the folder of a dead owner")
				g.Expect(dir+lockSuffix).NotTo(BeAnExistingFile(), "the lock file of a dead owner")
			}
			for _, dir := range live {
				files, err := filepath.Glob(filepath.Join(dir, "clone-*", "file"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(files).To(HaveLen(1), "the work of a live owner is intact")
				g.Expect(os.Stat(files[0])).To(HaveField("Size()", int64(ownerBytes)))
				g.Expect(dir + lockSuffix).To(BeAnExistingFile())
			}
			entries, err := os.ReadDir(Root())
			if len(live) == 0 && len(dead) == 0 {
				g.Expect(err).To(MatchError(os.ErrNotExist), "nothing made the root")
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(entries).To(HaveLen(2*len(live)), "a folder and a lock file per live owner")
			}
		})
	}
}

// A process that died after it created its lock file and before it made
// its folder left a lock file alone: it is swept too.
func TestSweepRemovesALockFileWithoutFolder(t *testing.T) {
	g := NewWithT(t)
	useTempDir(t)
	g.Expect(makeRoot(Root())).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(Root(), "123"+lockSuffix), nil, 0o600)).To(Succeed())

	g.Expect(Sweep(logr.Discard())).To(Equal(Swept{Folders: 1}))
	g.Expect(os.ReadDir(Root())).To(BeEmpty())
}

// Folders are made while sweepers run, many at once: not one folder is
// swept, whatever moment a sweeper looks at it.
func TestSweepNeverRemovesAFolderBeingMade(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join(t.TempDir(), "root")
	const makers, each = 4, 50
	var stop atomic.Bool
	var sweepers sync.WaitGroup
	var sweptAny atomic.Int64
	for range 2 {
		sweepers.Go(func() {
			for !stop.Load() {
				s, _ := sweep(root)
				sweptAny.Add(int64(s.Folders))
			}
		})
	}
	folders := make(chan *folder, makers*each)
	var wg sync.WaitGroup
	for range makers {
		wg.Go(func() {
			for range each {
				f, err := newFolder(root)
				if err != nil {
					t.Error(err)
					return
				}
				folders <- f
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	sweepers.Wait()
	close(folders)

	// A sweeper that takes a lock file before its maker does removes it,
	// and the maker starts again under another name.
	t.Logf("%d lock files were swept before their makers locked them", sweptAny.Load())
	n := 0
	for f := range folders {
		g.Expect(f.dir).To(BeADirectory())
		g.Expect(stillAt(f.lock)).To(BeTrue(), "the lock file of %s is its own", f.dir)
		_ = f.lock.Close()
		n++
	}
	g.Expect(n).To(Equal(makers * each))
}

func TestMkdirTempAndCreateTempMakeTheirsInTheProcessFolder(t *testing.T) {
	g := NewWithT(t)
	useTempDir(t)
	dir, err := Dir()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Dir(dir)).To(Equal(Root()))

	tmp, err := MkdirTemp("gitrepository-ns-name-")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tmp).To(HavePrefix(filepath.Join(dir, "gitrepository-ns-name-")))
	g.Expect(tmp).To(BeADirectory())
	f, err := CreateTemp("artifact-*.tar.gz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Close()).To(Succeed())
	g.Expect(filepath.Base(f.Name())).To(MatchRegexp(`^artifact-\d+\.tar\.gz$`))
	g.Expect(filepath.Dir(f.Name())).To(Equal(dir))

	g.Expect(Remove()).To(Succeed())
	g.Expect(dir).NotTo(BeAnExistingFile())
	g.Expect(dir + lockSuffix).NotTo(BeAnExistingFile())
}

// Something removed the process's folder (windlass dev removes its run
// folder between two sessions of one process): the next use makes a new
// one, locked.
func TestAFolderRemovedUnderneathIsMadeAgain(t *testing.T) {
	g := NewWithT(t)
	useTempDir(t)
	first, err := Dir()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.RemoveAll(Root())).To(Succeed())

	tmp, err := MkdirTemp("chart-")
	g.Expect(err).NotTo(HaveOccurred())
	second := filepath.Dir(tmp)
	g.Expect(second).NotTo(Equal(first))
	g.Expect(Sweep(logr.Discard())).To(Equal(Swept{}), "the new folder is locked")
	g.Expect(tmp).To(BeADirectory())
}

// A root that another user could enter or redirect is refused, by the
// makers and by Sweep alike.
func TestARootOthersCouldEnterIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func(root string) error
		want  string
	}{
		{name: "open to others", plant: func(root string) error {
			if err := os.Mkdir(root, 0o700); err != nil {
				return err
			}
			return os.Chmod(root, 0o777)
		}, want: "may be entered by other users"},
		{name: "a link", plant: func(root string) error {
			return os.Symlink(filepath.Dir(root), root)
		}, want: "is not a folder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			useTempDir(t)
			g.Expect(tt.plant(Root())).To(Succeed())
			_, err := MkdirTemp("clone-")
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			_, err = Sweep(logr.Discard())
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}
