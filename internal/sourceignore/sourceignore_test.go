package sourceignore

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/archive"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// writeFiles creates the files under root; keys are slash-separated paths.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// archivedFiles builds an archive of root with filter and returns the names
// of the regular files it holds.
func archivedFiles(t *testing.T, root string, filter archive.Filter) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := archive.Build(&buf, root, filter); err != nil {
		t.Fatalf("Build: %v", err)
	}
	var names []string
	for _, hdr := range testutil.TarGzHeaders(t, buf.Bytes()) {
		if hdr.Typeflag == tar.TypeReg {
			names = append(names, hdr.Name)
		}
	}
	return names
}

// defaultTree holds a file for every default rule, in several cases, plus
// files that must be kept.
var defaultTree = map[string]string{
	".git/config":              "[core]",
	".git/objects/ab/cdef":     "obj",
	"sub/.git":                 "gitdir: ../.git/modules/sub",
	".gitignore":               "x",
	".gitmodules":              "x",
	".gitattributes":           "x",
	"img/a.jpg":                "x",
	"img/b.JPEG":               "x",
	"img/c.gif":                "x",
	"img/LOGO.PNG":             "x",
	"media/m.wmv":              "x",
	"media/m.Flv":              "x",
	"dist/chart.tar.gz":        "x",
	"dist/bundle.ZIP":          "x",
	".github/workflows/ci.yml": "x",
	".GitHub/other.yml":        "x",
	".circleci/config.yml":     "x",
	".travis.yml":              "x",
	".gitlab-ci.yml":           "x",
	"appveyor.yml":             "x",
	".drone.yml":               "x",
	"cloudbuild.yaml":          "x",
	"codeship-services.yml":    "x",
	"codeship-steps.yml":       "x",
	".goreleaser.yml":          "x",
	"tools/.goreleaser.yml":    "x",
	"secrets/.sops.yaml":       "x",
	"a/b/c/.flux.yaml":         "x",
	// kept
	"apps/deploy.yaml":      "kind: Deployment",
	"README.md":             "readme",
	"docs/png-notes.txt":    "not an image",
	"github/workflows.yaml": "not the .github directory",
	"archive.tar":           "not gzipped",
	"sub/app.yaml":          "x",
}

var defaultKept = []string{
	"README.md",
	"apps/deploy.yaml",
	"archive.tar",
	"docs/png-notes.txt",
	"github/workflows.yaml",
	"sub/app.yaml",
}

func ptr(s string) *string { return &s }

func TestNewFilter(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		ignore *string
		want   []string
	}{
		{
			name:  "default excludes, case-insensitive extensions",
			files: defaultTree,
			want:  defaultKept,
		},
		{
			name: "root .sourceignore adds rules and can negate",
			files: map[string]string{
				".sourceignore": "# comment\n\n*.txt\n!keep.txt\n",
				"a.txt":         "x",
				"dir/b.txt":     "x",
				"keep.txt":      "x",
				"app.yaml":      "x",
			},
			want: []string{".sourceignore", "app.yaml", "keep.txt"},
		},
		{
			name: "nested .sourceignore is scoped to its directory",
			files: map[string]string{
				"sub/.sourceignore":   "*.yaml\n/top.md\n",
				"sub/a.yaml":          "x",
				"sub/deep/b.yaml":     "x",
				"sub/top.md":          "x",
				"sub/deep/top.md":     "x",
				"a.yaml":              "x",
				"top.md":              "x",
				"other/.sourceignore": "",
			},
			want: []string{"a.yaml", "other/.sourceignore", "sub/.sourceignore", "sub/deep/top.md", "top.md"},
		},
		{
			name: "deeper .sourceignore overrides a shallower one",
			files: map[string]string{
				".sourceignore":      "*.md\n",
				"docs/.sourceignore": "!guide.md\n",
				"docs/guide.md":      "x",
				"docs/other.md":      "x",
				"guide.md":           "x",
			},
			want: []string{".sourceignore", "docs/.sourceignore", "docs/guide.md"},
		},
		{
			name: ".sourceignore can re-include a default exclusion",
			files: map[string]string{
				".sourceignore": "!logo.png\n!.github/\n",
				"logo.png":      "x",
				"other.png":     "x",
				".github/a.yml": "x",
			},
			want: []string{".github/a.yml", ".sourceignore", "logo.png"},
		},
		{
			name: ".git cannot be re-included",
			files: map[string]string{
				".sourceignore": "!.git/\n!.git\n!config\n",
				".git/config":   "x",
				"a.yaml":        "x",
			},
			ignore: ptr("!.git/\n"),
			want:   []string{".sourceignore", "a.yaml"},
		},
		{
			name: "directory rules exclude whole sub-trees",
			files: map[string]string{
				".sourceignore":       "build/\n",
				"build/out/x.yaml":    "x",
				"src/build/y.yaml":    "x",
				"src/build.yaml":      "x",
				"build/.sourceignore": "!x.yaml\n",
			},
			want: []string{".sourceignore", "src/build.yaml"},
		},
		{
			name: "CRLF line endings",
			files: map[string]string{
				".sourceignore": "*.txt\r\n!keep.txt\r\n",
				"a.txt":         "x",
				"keep.txt":      "x",
			},
			want: []string{".sourceignore", "keep.txt"},
		},
		{
			name:   "spec.ignore replaces the defaults",
			files:  defaultTree,
			ignore: ptr("*.yaml\n!apps/deploy.yaml\n"),
			want: []string{
				".GitHub/other.yml", ".circleci/config.yml", ".drone.yml", ".github/workflows/ci.yml",
				".gitattributes", ".gitignore", ".gitlab-ci.yml", ".gitmodules", ".goreleaser.yml",
				".travis.yml", "README.md", "appveyor.yml", "apps/deploy.yaml", "archive.tar",
				"codeship-services.yml", "codeship-steps.yml", "dist/bundle.ZIP", "dist/chart.tar.gz",
				"docs/png-notes.txt", "img/LOGO.PNG", "img/a.jpg", "img/b.JPEG", "img/c.gif",
				"media/m.Flv", "media/m.wmv", "tools/.goreleaser.yml",
			},
		},
		{
			name:   "empty spec.ignore keeps everything but .git",
			files:  map[string]string{".git/HEAD": "ref", "a.png": "x", ".github/ci.yml": "x"},
			ignore: ptr(""),
			want:   []string{".github/ci.yml", "a.png"},
		},
		{
			name: "spec.ignore is case-sensitive and combines with .sourceignore",
			files: map[string]string{
				".sourceignore": "*.log\n",
				"a.png":         "x",
				"b.PNG":         "x",
				"c.log":         "x",
				"d.yaml":        "x",
			},
			ignore: ptr("*.png\n"),
			want:   []string{".sourceignore", "b.PNG", "d.yaml"},
		},
		{
			name: "spec.ignore takes priority over .sourceignore",
			files: map[string]string{
				".sourceignore": "!important.md\n",
				"important.md":  "x",
				"a.yaml":        "x",
			},
			ignore: ptr("*.md\n"),
			want:   []string{".sourceignore", "a.yaml"},
		},
		{
			name: "anchored and globstar patterns in spec.ignore",
			files: map[string]string{
				"a.yaml":         "x",
				"dir/a.yaml":     "x",
				"x/y/z/tmp.json": "x",
				"tmp.json":       "x",
				"keep.json":      "x",
			},
			ignore: ptr("/a.yaml\n**/tmp.json\n"),
			want:   []string{"dir/a.yaml", "keep.json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			filter, err := NewFilter(root, tt.ignore)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(archivedFiles(t, root, filter)).To(ConsistOf(tt.want))
		})
	}
}

func TestNewFilterIgnoreFileSymlinkNotRead(t *testing.T) {
	g := NewWithT(t)
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"rules": "*\n"})
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"a.yaml": "x"})
	g.Expect(os.Symlink(filepath.Join(outside, "rules"), filepath.Join(root, IgnoreFile))).To(Succeed())

	filter, err := NewFilter(root, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filter("a.yaml", false)).To(BeFalse())
}

func TestNewFilterIgnoreFileSize(t *testing.T) {
	big := strings.Repeat("#", int(MaxIgnoreFileSize)) + "\n"
	tests := []struct {
		name    string
		files   map[string]string
		wantErr bool
	}{
		{name: "at the cap", files: map[string]string{IgnoreFile: strings.Repeat("#", int(MaxIgnoreFileSize))}},
		{name: "over the cap", files: map[string]string{"sub/" + IgnoreFile: big}, wantErr: true},
		{name: "over the cap in an excluded directory", files: map[string]string{".github/" + IgnoreFile: big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			_, err := NewFilter(root, nil)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("sub/.sourceignore is larger than")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
		})
	}
}

func TestNewFilterMissingRoot(t *testing.T) {
	g := NewWithT(t)
	_, err := NewFilter(filepath.Join(t.TempDir(), "missing"), nil)
	g.Expect(err).To(HaveOccurred())
}

func TestFilterPaths(t *testing.T) {
	root := t.TempDir()
	filter, err := NewFilter(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{path: "", isDir: true, want: false},
		{path: ".", isDir: true, want: false},
		{path: "a.yaml", want: false},
		{path: "./a.png", want: true},
		{path: "../outside.yaml", want: true},
		{path: "..", isDir: true, want: true},
		{path: "/etc/passwd", want: true},
		{path: ".git", isDir: true, want: true},
		{path: ".git", isDir: false, want: true},
		{path: ".GIT", isDir: true, want: true},
		{path: "sub/.git/config", want: true},
		{path: ".github", isDir: true, want: true},
		{path: ".github", isDir: false, want: false},
		{path: "x/.github/y.yaml", want: true},
		{path: "deep/dir/.sops.yaml", want: true},
		{path: "deep/dir/.SOPS.yaml", want: true},
		{path: "photo.Jpg", want: true},
		{path: "photo.jpg", isDir: true, want: true},
		{path: "jpg", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			NewWithT(t).Expect(filter(tt.path, tt.isDir)).To(Equal(tt.want))
		})
	}
}

func TestParsePatterns(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ParsePatterns("# only comments\n\n   \n\r\n", nil)).To(BeEmpty())
	g.Expect(ParsePatterns("a\nb\r\n!c\n", nil)).To(HaveLen(3))
	g.Expect(ParsePatterns(DefaultExcludes, nil)).To(HaveLen(24))
	long := strings.Repeat("x", 2<<20)
	g.Expect(ParsePatterns("a\n"+long+"\nb\n", nil)).To(HaveLen(3), "long lines do not stop parsing")
}

func TestNewKeyFilter(t *testing.T) {
	custom := "*.md\n!keep.md\n"
	for _, tc := range []struct {
		name   string
		ignore *string
		key    string
		want   bool
	}{
		{name: "default keeps yaml", key: "apps/app.yaml", want: false},
		{name: "default drops archives", key: "apps/bundle.tar.gz", want: true},
		{name: "default drops a CI folder's files", key: ".github/workflows/ci.yml", want: true},
		{name: "git metadata always", ignore: &custom, key: "x/.git/config", want: true},
		{name: "spec rule", ignore: &custom, key: "docs/readme.md", want: true},
		{name: "spec negation", ignore: &custom, key: "keep.md", want: false},
		{name: "spec replaces defaults", ignore: &custom, key: "bundle.tar.gz", want: false},
		{name: "escape", key: "../x.yaml", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(NewKeyFilter(tc.ignore)(tc.key, false)).To(Equal(tc.want))
		})
	}
}
