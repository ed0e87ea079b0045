package generator

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// tarball returns a .tar.gz of files; a name ending in "@link" is written
// as a symbolic link to /etc/passwd.
func tarball(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}
		if link, ok := strings.CutSuffix(name, "@link"); ok {
			hdr = &tar.Header{Name: link, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(content)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// repo is the tree of the source "src" in the table below.
var repo = map[string]string{
	"config.yaml":                "c: 1\n",
	"configs/file1.yaml":         "f: 1\n",
	"configs/file2.yaml":         "f: 2\n",
	"configs/README.md":          "readme\n",
	"configs/subdir/file3.yaml":  "f: 3\n",
	"configs/testdata/bad.yaml":  "bad\n",
	"deploy/app/deployment.yaml": "kind: Deployment\n",
	"deploy/app/notes.md":        "notes\n",
	"values.yaml":                "image:\n  tag: v1\n  pullPolicy: Always\nports: [80, 443]\nreplicas: 1\n",
	"values-prod.yaml":           "image:\n  tag: v2\nports: [8080]\n",
	"broken.yaml":                "a: [\n",
	"scalar.yaml":                "just a string\n",
	"charts/podinfo-6.7.0.tgz":   "", // filled in by the test
	"charts/README.md":           "charts\n",
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name    string
		rules   []Rule
		want    map[string]string
		wantErr string
	}{
		{name: "a file to a file", rules: []Rule{{From: "@src/config.yaml", To: "@artifact/apps/app.yaml"}},
			want: map[string]string{"apps/app.yaml": "c: 1\n"}},
		{name: "a file into a folder", rules: []Rule{{From: "@src/config.yaml", To: "@artifact/apps/"}},
			want: map[string]string{"apps/config.yaml": "c: 1\n"}},
		{name: "a file into a folder an earlier rule made", rules: []Rule{
			{From: "@src/configs/file1.yaml", To: "@artifact/apps/"},
			{From: "@src/config.yaml", To: "@artifact/apps"},
		}, want: map[string]string{"apps/file1.yaml": "f: 1\n", "apps/config.yaml": "c: 1\n"}},
		{name: "files of a glob into a folder", rules: []Rule{{From: "@src/configs/*.yaml", To: "@artifact/apps/"}},
			want: map[string]string{"apps/file1.yaml": "f: 1\n", "apps/file2.yaml": "f: 2\n"}},
		{name: "a folder as a folder", rules: []Rule{{From: "@src/deploy/", To: "@artifact/apps/"}},
			want: map[string]string{"apps/deploy/app/deployment.yaml": "kind: Deployment\n", "apps/deploy/app/notes.md": "notes\n"}},
		{name: "a folder's contents, with exclusions", rules: []Rule{{From: "@src/configs/**", To: "@artifact/apps/",
			Exclude: []string{"*.md", "**/testdata/**", "subdir/**"}}},
			want: map[string]string{"apps/file1.yaml": "f: 1\n", "apps/file2.yaml": "f: 2\n"}},
		{name: "an excluded folder name at any depth", rules: []Rule{{From: "@src/configs/**", To: "@artifact/",
			Exclude: []string{"testdata", "subdir", "*.md"}}},
			want: map[string]string{"file1.yaml": "f: 1\n", "file2.yaml": "f: 2\n"}},
		{name: "the root's contents", rules: []Rule{{From: "@src/deploy/**", To: "@artifact/"}, {From: "@other/", To: "@artifact/"}},
			want: map[string]string{"app/deployment.yaml": "kind: Deployment\n", "app/notes.md": "notes\n", "x.yaml": "x: other\n", "app/y.yaml": "y: other\n"}},
		{name: "later rules overwrite files, folders merge", rules: []Rule{
			{From: "@src/deploy/**", To: "@artifact/"},
			{From: "@other/**", To: "@artifact/"},
			{From: "@src/config.yaml", To: "@artifact/x.yaml"},
		}, want: map[string]string{"app/deployment.yaml": "kind: Deployment\n", "app/notes.md": "notes\n", "x.yaml": "c: 1\n", "app/y.yaml": "y: other\n"}},
		{name: "an excluded single file copies nothing", rules: []Rule{{From: "@src/configs/README.md", To: "@artifact/", Exclude: []string{"*.md"}}},
			want: map[string]string{}},
		{name: "merge as Helm merges values", rules: []Rule{
			{From: "@src/values.yaml", To: "@artifact/values.yaml"},
			{From: "@src/values-prod.yaml", To: "@artifact/values.yaml", Strategy: Merge},
		}, want: map[string]string{"values.yaml": "image:\n  pullPolicy: Always\n  tag: v2\nports:\n- 8080\nreplicas: 1\n"}},
		{name: "merge into nothing copies", rules: []Rule{{From: "@src/values-prod.yaml", To: "@artifact/values.yaml", Strategy: Merge}},
			want: map[string]string{"values.yaml": "image:\n  tag: v2\nports: [8080]\n"}},
		{name: "extract a chart", rules: []Rule{{From: "@src/charts/podinfo-6.7.0.tgz", To: "@artifact/", Strategy: Extract}},
			want: map[string]string{"podinfo/Chart.yaml": "name: podinfo\n", "podinfo/values.yaml": "replicas: 1\n"}},
		{name: "extract the tarballs a glob matches, skipping other files", rules: []Rule{{From: "@src/charts/*", To: "@artifact/charts/", Strategy: Extract}},
			want: map[string]string{"charts/podinfo/Chart.yaml": "name: podinfo\n", "charts/podinfo/values.yaml": "replicas: 1\n"}},

		{name: "unknown alias", rules: []Rule{{From: "@nope/x.yaml", To: "@artifact/"}}, wantErr: "source alias 'nope' not found"},
		{name: "missing file", rules: []Rule{{From: "@src/missing.yaml", To: "@artifact/"}}, wantErr: "'missing.yaml' does not exist in source 'src'"},
		{name: "missing file under a file", rules: []Rule{{From: "@src/config.yaml/x", To: "@artifact/"}}, wantErr: "does not exist in source 'src'"},
		{name: "glob matching nothing", rules: []Rule{{From: "@src/configs/*.json", To: "@artifact/"}}, wantErr: "no files match pattern 'configs/*.json' in source 'src'"},
		{name: "glob all excluded", rules: []Rule{{From: "@src/configs/*.md", To: "@artifact/", Exclude: []string{"*.md"}}}, wantErr: "is excluded"},
		{name: "from climbing out", rules: []Rule{{From: "@src/../../etc/passwd", To: "@artifact/"}}, wantErr: "stays inside its tree"},
		{name: "from absolute", rules: []Rule{{From: "@src//etc/passwd", To: "@artifact/"}}, wantErr: "stays inside its tree"},
		{name: "to climbing out", rules: []Rule{{From: "@src/config.yaml", To: "@artifact/../x.yaml"}}, wantErr: "stays inside its tree"},
		{name: "to without the artifact alias", rules: []Rule{{From: "@src/config.yaml", To: "/tmp/x.yaml"}}, wantErr: "must be @artifact/<path>"},
		{name: "from without an alias", rules: []Rule{{From: "src/config.yaml", To: "@artifact/"}}, wantErr: "must be @<alias>/<path>"},
		{name: "bad glob", rules: []Rule{{From: "@src/[.yaml", To: "@artifact/"}}, wantErr: "invalid glob pattern"},
		{name: "bad exclude", rules: []Rule{{From: "@src/**", To: "@artifact/", Exclude: []string{"[x"}}}, wantErr: "invalid exclude pattern '[x'"},
		{name: "extract a file that is no tarball", rules: []Rule{{From: "@src/config.yaml", To: "@artifact/", Strategy: Extract}}, wantErr: "is not a tarball"},
		{name: "extract a folder", rules: []Rule{{From: "@src/charts/", To: "@artifact/", Strategy: Extract}}, wantErr: "takes tarballs, not folders"},
		{name: "extract a tarball with a link", rules: []Rule{{From: "@bad/evil.tgz", To: "@artifact/", Strategy: Extract}}, wantErr: "unsafe archive entry"},
		{name: "extract a tarball that climbs out", rules: []Rule{{From: "@bad/slip.tgz", To: "@artifact/", Strategy: Extract}}, wantErr: "unsafe archive entry"},
		{name: "merge what is not YAML", rules: []Rule{
			{From: "@src/values.yaml", To: "@artifact/values.yaml"},
			{From: "@src/broken.yaml", To: "@artifact/values.yaml", Strategy: Merge},
		}, wantErr: "merging 'broken.yaml': not YAML values"},
		{name: "merge what is not a map", rules: []Rule{
			{From: "@src/values.yaml", To: "@artifact/values.yaml"},
			{From: "@src/scalar.yaml", To: "@artifact/values.yaml", Strategy: Merge},
		}, wantErr: "not YAML values"},
		{name: "a folder where a file is", rules: []Rule{
			{From: "@src/config.yaml", To: "@artifact/x"},
			{From: "@src/configs/*.yaml", To: "@artifact/x/"},
		}, wantErr: "'x/file1.yaml' cannot be written: a file of the artifact is where a folder must be"},
		{name: "a file where a folder is", rules: []Rule{
			{From: "@src/configs/**", To: "@artifact/", Exclude: []string{"*.md", "testdata"}},
			{From: "@clash/*", To: "@artifact/"},
		}, wantErr: "'subdir' is a folder of the artifact, not a file"},
		{name: "unknown strategy", rules: []Rule{{From: "@src/config.yaml", To: "@artifact/", Strategy: "Append"}}, wantErr: "unknown strategy 'Append'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sources := testSources(t)
			out := t.TempDir()
			err := (&Builder{Sources: sources}).Build(tt.rules, out)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(testutil.ReadTree(t, out)).To(Equal(tt.want))
		})
	}
}

// testSources writes the trees of the sources "src" (repo, plus a
// symbolic link to a file outside it), "other", and "bad" (tarballs with a
// link and with a name that climbs out), and "clash" (a file named like a
// folder of "src").
func testSources(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for p, c := range repo {
		files[p] = c
	}
	files["charts/podinfo-6.7.0.tgz"] = tarball(t, map[string]string{"podinfo/Chart.yaml": "name: podinfo\n", "podinfo/values.yaml": "replicas: 1\n"})
	src := testutil.WriteTree(t, files)
	outside := filepath.Join(testutil.WriteTree(t, map[string]string{"secret.txt": "secret"}), "secret.txt")
	if err := os.Symlink(outside, filepath.Join(src, "link.txt")); err != nil {
		t.Fatal(err)
	}
	other := testutil.WriteTree(t, map[string]string{"x.yaml": "x: other\n", "app/y.yaml": "y: other\n"})
	bad := testutil.WriteTree(t, map[string]string{
		"evil.tgz": tarball(t, map[string]string{"passwd@link": ""}),
		"slip.tgz": tarball(t, map[string]string{"../../x.yaml": "x"}),
	})
	clash := testutil.WriteTree(t, map[string]string{"subdir": "a file\n"})
	return map[string]string{"src": src, "other": other, "bad": bad, "clash": clash}
}

func TestBuildNeverCopiesALink(t *testing.T) {
	g := NewWithT(t)
	out := t.TempDir()
	g.Expect((&Builder{Sources: testSources(t)}).Build([]Rule{{From: "@src/**", To: "@artifact/"}}, out)).To(Succeed())
	tree := testutil.ReadTree(t, out)
	g.Expect(tree).To(HaveKey("config.yaml"))
	g.Expect(tree).NotTo(HaveKey("link.txt"))

	err := (&Builder{Sources: testSources(t)}).Build([]Rule{{From: "@src/*.txt", To: "@artifact/"}}, t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("no files match pattern '*.txt'")))
}

func TestBuildRefusesALinkNamedDirectly(t *testing.T) {
	g := NewWithT(t)
	err := (&Builder{Sources: testSources(t)}).Build([]Rule{{From: "@src/link.txt", To: "@artifact/"}}, t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("'link.txt' in source 'src' is not a regular file")))
}

func TestBuildBoundsTheArtifactsSize(t *testing.T) {
	tests := []struct {
		name  string
		rules []Rule
	}{
		{name: "copies", rules: []Rule{{From: "@src/configs/**", To: "@artifact/"}, {From: "@src/values.yaml", To: "@artifact/"}}},
		{name: "an extracted tarball", rules: []Rule{{From: "@src/charts/podinfo-6.7.0.tgz", To: "@artifact/", Strategy: Extract}}},
		{name: "a merge", rules: []Rule{{From: "@src/values.yaml", To: "@artifact/v.yaml"}, {From: "@src/values-prod.yaml", To: "@artifact/v.yaml", Strategy: Merge}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := (&Builder{Sources: testSources(t), MaxSize: 40}).Build(tt.rules, t.TempDir())
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(Or(ContainSubstring(ErrTooLarge.Error()), ContainSubstring("maximum uncompressed size")))
			g.Expect((&Builder{Sources: testSources(t), MaxSize: 100 << 10}).Build(tt.rules, t.TempDir())).To(Succeed())
		})
	}
}

func TestTreeDigest(t *testing.T) {
	g := NewWithT(t)
	files := map[string]string{"x.yaml": "x", "d/y.yaml": "y"}
	a, b := testutil.WriteTree(t, files), testutil.WriteTree(t, files)
	write := func(p, content string) {
		g.Expect(os.WriteFile(filepath.Join(b, p), []byte(content), 0o644)).To(Succeed())
	}
	da, err := TreeDigest(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(TreeDigest(b)).To(Equal(da), "the same files")

	write("d/y.yaml", "z")
	g.Expect(TreeDigest(b)).NotTo(Equal(da), "a file's bytes")
	write("d/y.yaml", "y")
	g.Expect(TreeDigest(b)).To(Equal(da))

	g.Expect(os.Chmod(filepath.Join(b, "x.yaml"), 0o755)).To(Succeed())
	g.Expect(TreeDigest(b)).NotTo(Equal(da), "a file made executable")
	g.Expect(os.Chmod(filepath.Join(b, "x.yaml"), 0o644)).To(Succeed())

	g.Expect(os.Rename(filepath.Join(b, "d"), filepath.Join(b, "e"))).To(Succeed())
	g.Expect(TreeDigest(b)).NotTo(Equal(da), "a folder renamed")
}
