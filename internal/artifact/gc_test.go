package artifact

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
)

// agedFile is a file of an artifact directory with its age.
type agedFile struct {
	name string
	age  time.Duration
}

func TestGarbageCollect(t *testing.T) {
	const current = "current.tar.gz"
	tests := []struct {
		name        string
		ttl         time.Duration
		records     int
		files       []agedFile // besides the current artifact, which is 0s old unless listed
		wantDeleted []string
	}{
		{
			name: "by count: keeps the newest other file", ttl: time.Hour, records: 2,
			files:       []agedFile{{"a.tar.gz", 1 * time.Minute}, {"b.tar.gz", 2 * time.Minute}, {"c.tar.gz", 3 * time.Minute}},
			wantDeleted: []string{"b.tar.gz", "c.tar.gz"},
		},
		{
			name: "by count: one record keeps only the current", ttl: time.Hour, records: 1,
			files:       []agedFile{{"a.tar.gz", time.Second}, {"b.tar.gz", 2 * time.Second}},
			wantDeleted: []string{"a.tar.gz", "b.tar.gz"},
		},
		{
			name: "by count: nothing to delete", ttl: time.Hour, records: 3,
			files: []agedFile{{"a.tar.gz", time.Second}, {"b.tar.gz", 2 * time.Second}},
		},
		{
			name: "by age: deletes files older than the TTL even within the count", ttl: time.Minute, records: 5,
			files:       []agedFile{{"fresh.tar.gz", 10 * time.Second}, {"old.tar.gz", 2 * time.Minute}, {"older.tar.gz", time.Hour}},
			wantDeleted: []string{"old.tar.gz", "older.tar.gz"},
		},
		{
			name: "never the current artifact, however old", ttl: time.Minute, records: 1,
			files:       []agedFile{{current, 24 * time.Hour}, {"newer.tar.gz", time.Second}},
			wantDeleted: []string{"newer.tar.gz"},
		},
		{
			name: "current counts as a record even when older", ttl: time.Hour, records: 2,
			files:       []agedFile{{current, 30 * time.Minute}, {"n1.tar.gz", time.Minute}, {"n2.tar.gz", 2 * time.Minute}},
			wantDeleted: []string{"n2.tar.gz"},
		},
		{
			name: "temporary files younger than the TTL are spared", ttl: time.Hour, records: 1,
			files: []agedFile{{tempPrefix + "123", 30 * time.Minute}},
		},
		{
			name: "temporary files younger than ten minutes are spared whatever the TTL", ttl: time.Second, records: 1,
			files: []agedFile{{tempPrefix + "123", 5 * time.Minute}},
		},
		{
			name: "stale temporary files are deleted", ttl: time.Minute, records: 2,
			files:       []agedFile{{tempPrefix + "123", 11 * time.Minute}, {tempPrefix + "456", time.Second}},
			wantDeleted: []string{tempPrefix + "123"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := New(filepath.Join(t.TempDir(), "data"), testAddr, tt.ttl, tt.records)
			g.Expect(err).NotTo(HaveOccurred())
			cur := s.NewArtifactFor("GitRepository", obj("default", "podinfo"), "r", current)
			g.Expect(s.Copy(&cur, bytesReader("current"))).To(Succeed())
			dir := filepath.Dir(s.LocalPath(cur))
			g.Expect(os.Mkdir(filepath.Join(dir, "subdir"), 0o750)).To(Succeed())
			now := time.Now()
			for _, f := range tt.files {
				p := filepath.Join(dir, f.name)
				if f.name != current {
					g.Expect(os.WriteFile(p, []byte(f.name), 0o640)).To(Succeed())
				}
				g.Expect(os.Chtimes(p, now.Add(-f.age), now.Add(-f.age))).To(Succeed())
			}

			deleted, err := s.GarbageCollect(context.Background(), cur)
			g.Expect(err).NotTo(HaveOccurred())
			var want []string
			for _, name := range tt.wantDeleted {
				want = append(want, path.Join("gitrepository/default/podinfo", name))
			}
			g.Expect(deleted).To(ConsistOf(want))
			for _, name := range tt.wantDeleted {
				g.Expect(filepath.Join(dir, name)).NotTo(BeAnExistingFile())
			}
			g.Expect(s.Verify(cur)).To(Succeed())
			g.Expect(filepath.Join(dir, "subdir")).To(BeADirectory())
		})
	}
}

func TestGarbageCollectEdgeCases(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)

	missing := s.NewArtifactFor("GitRepository", obj("default", "none"), "r", "a.tar.gz")
	deleted, err := s.GarbageCollect(context.Background(), missing)
	g.Expect(err).NotTo(HaveOccurred(), "an object without a directory has nothing to collect")
	g.Expect(deleted).To(BeEmpty())

	_, err = s.GarbageCollect(context.Background(), meta.Artifact{Path: "../../x/y"})
	g.Expect(err).To(MatchError(ErrInvalidPath))

	cur := storedArtifact(t, s, "cur.tar.gz")
	old := filepath.Join(filepath.Dir(s.LocalPath(cur)), "old.tar.gz")
	g.Expect(os.WriteFile(old, []byte("old"), 0o640)).To(Succeed())
	past := time.Now().Add(-time.Hour)
	g.Expect(os.Chtimes(old, past, past)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.GarbageCollect(ctx, cur)
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(old).To(BeAnExistingFile())
}

func TestRemoveAll(t *testing.T) {
	g := NewWithT(t)
	s := newStorage(t)
	a := storedArtifact(t, s, "a.tar.gz")
	other := s.NewArtifactFor("GitRepository", obj("default", "other"), "r", "o.tar.gz")
	g.Expect(s.Copy(&other, bytesReader("other"))).To(Succeed())

	removed, err := s.RemoveAll(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(Equal("gitrepository/default/podinfo"))
	g.Expect(filepath.Join(s.BasePath(), "gitrepository/default/podinfo")).NotTo(BeADirectory())
	g.Expect(s.Verify(other)).To(Succeed(), "other objects' artifacts stay")

	removed, err = s.RemoveAll(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeEmpty())

	_, err = s.RemoveAll(meta.Artifact{Path: "gitrepository/default/../../.."})
	g.Expect(err).To(MatchError(ErrInvalidPath))
	g.Expect(s.BasePath()).To(BeADirectory())
}
