package imageupdate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

var (
	testDigest = "sha256:" + strings.Repeat("ab", 32)
	podinfo    = PolicyKey{Namespace: "apps", Name: "podinfo"}
	pinned     = PolicyKey{Namespace: "apps", Name: "pinned"}
	testRefs   = map[PolicyKey]ImageRef{
		podinfo: {Name: "ghcr.io/org/app", Tag: "1.0.1"},
		pinned:  {Name: "ghcr.io/org/pinned", Tag: "2.0.0", Digest: testDigest},
	}
)

// writeTree writes files (slash-separated paths relative to a new root) and
// returns the root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readTree(t *testing.T, root, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestApplySettersGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    string
		changes []Change
	}{
		{
			name: "deployment full reference",
			in: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo # the app
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:podinfo"}
          args: ["--port", "9898"]
`,
			want: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo # the app
  namespace: apps
spec:
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/org/app:1.0.1 # {"$imagepolicy": "apps:podinfo"}
          args: ["--port", "9898"]
`,
			changes: []Change{{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"}},
		},
		{
			name: "cronjob",
			in: `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - image: ghcr.io/org/app:0.9.0   # {"$imagepolicy": "apps:podinfo"}
`,
			want: `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - image: ghcr.io/org/app:1.0.1   # {"$imagepolicy": "apps:podinfo"}
`,
			changes: []Change{{OldValue: "ghcr.io/org/app:0.9.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"}},
		},
		{
			name: "list items",
			in: `images:
  - ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:podinfo"}
  - docker.io/library/redis:7
  - 1.0.0 # {"$imagepolicy": "apps:podinfo:tag"}
`,
			want: `images:
  - ghcr.io/org/app:1.0.1 # {"$imagepolicy": "apps:podinfo"}
  - docker.io/library/redis:7
  - 1.0.1 # {"$imagepolicy": "apps:podinfo:tag"}
`,
			changes: []Change{
				{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"},
				{OldValue: "1.0.0", NewValue: "1.0.1", Setter: "apps:podinfo:tag"},
			},
		},
		{
			name: "helmrelease values",
			in: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  values:
    image:
      repository: ghcr.io/old/app # {"$imagepolicy": "apps:podinfo:name"}
      tag: 1.0.0 # {"$imagepolicy": "apps:podinfo:tag"}
      pullPolicy: IfNotPresent
`,
			want: `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  values:
    image:
      repository: ghcr.io/org/app # {"$imagepolicy": "apps:podinfo:name"}
      tag: 1.0.1 # {"$imagepolicy": "apps:podinfo:tag"}
      pullPolicy: IfNotPresent
`,
			changes: []Change{
				{OldValue: "ghcr.io/old/app", NewValue: "ghcr.io/org/app", Setter: "apps:podinfo:name"},
				{OldValue: "1.0.0", NewValue: "1.0.1", Setter: "apps:podinfo:tag"},
			},
		},
		{
			name: "kustomization images with digest",
			in: `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deploy.yaml]
images:
- name: app
  newName: ghcr.io/org/pinned # {"$imagepolicy": "apps:pinned:name"}
  newTag: 1.9.0 # {"$imagepolicy": "apps:pinned:tag"}
  digest: sha256:0000000000000000000000000000000000000000000000000000000000000000 # {"$imagepolicy": "apps:pinned:digest"}
`,
			want: `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deploy.yaml]
images:
- name: app
  newName: ghcr.io/org/pinned # {"$imagepolicy": "apps:pinned:name"}
  newTag: 2.0.0 # {"$imagepolicy": "apps:pinned:tag"}
  digest: ` + testDigest + ` # {"$imagepolicy": "apps:pinned:digest"}
`,
			changes: []Change{
				{OldValue: "1.9.0", NewValue: "2.0.0", Setter: "apps:pinned:tag"},
				{OldValue: "sha256:" + strings.Repeat("0", 64), NewValue: testDigest, Setter: "apps:pinned:digest"},
			},
		},
		{
			name: "full reference with digest",
			in:   "image: ghcr.io/org/pinned:1.0.0 # {\"$imagepolicy\": \"apps:pinned\"}\n",
			want: "image: ghcr.io/org/pinned:2.0.0@" + testDigest + " # {\"$imagepolicy\": \"apps:pinned\"}\n",
			changes: []Change{{
				OldValue: "ghcr.io/org/pinned:1.0.0", NewValue: "ghcr.io/org/pinned:2.0.0@" + testDigest, Setter: "apps:pinned",
			}},
		},
		{
			name: "quoting styles kept",
			in: `a: "ghcr.io/org/app:1.0.0" # {"$imagepolicy": "apps:podinfo"}
b: '1.0.0' # {"$imagepolicy": "apps:podinfo:tag"}
c: ""   # {"$imagepolicy": "apps:podinfo:tag"}
`,
			want: `a: "ghcr.io/org/app:1.0.1" # {"$imagepolicy": "apps:podinfo"}
b: '1.0.1' # {"$imagepolicy": "apps:podinfo:tag"}
c: "1.0.1"   # {"$imagepolicy": "apps:podinfo:tag"}
`,
			changes: []Change{
				{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"},
				{OldValue: "1.0.0", NewValue: "1.0.1", Setter: "apps:podinfo:tag"},
				{OldValue: "", NewValue: "1.0.1", Setter: "apps:podinfo:tag"},
			},
		},
		{
			name:    "CRLF line endings",
			in:      "kind: Deployment\r\nimage: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\r\nreplicas: 2\r\n",
			want:    "kind: Deployment\r\nimage: ghcr.io/org/app:1.0.1 # {\"$imagepolicy\": \"apps:podinfo\"}\r\nreplicas: 2\r\n",
			changes: []Change{{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"}},
		},
		{
			name:    "byte order mark and CR-only line ends",
			in:      "\ufeffx: 1\rtag: 1.0.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\r",
			want:    "\ufeffx: 1\rtag: 1.0.1 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\r",
			changes: []Change{{OldValue: "1.0.0", NewValue: "1.0.1", Setter: "apps:podinfo:tag"}},
		},
		{
			name: "multi-document file",
			in: `# leading comment
---
kind: Deployment
metadata: {name: a}
image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:podinfo"}
---

# between
kind: Deployment
metadata: {name: b}
image: ghcr.io/org/pinned:1.0.0 # {"$imagepolicy": "apps:pinned"}
...
`,
			want: `# leading comment
---
kind: Deployment
metadata: {name: a}
image: ghcr.io/org/app:1.0.1 # {"$imagepolicy": "apps:podinfo"}
---

# between
kind: Deployment
metadata: {name: b}
image: ghcr.io/org/pinned:2.0.0@` + testDigest + ` # {"$imagepolicy": "apps:pinned"}
...
`,
			changes: []Change{
				{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"},
				{OldValue: "ghcr.io/org/pinned:1.0.0", NewValue: "ghcr.io/org/pinned:2.0.0@" + testDigest, Setter: "apps:pinned"},
			},
		},
		{
			name: "lenient white space, tabs, anchors and tags",
			in: "a: ghcr.io/org/app:1.0.0 #{\"$imagepolicy\":\"apps:podinfo\"}\n" +
				"b:\t1.0.0\t#   {  \"$imagepolicy\"  :  \" apps:podinfo:tag \"  }   \n" +
				"c: &tag !!str 1.0.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\n" +
				"d: *tag\n",
			want: "a: ghcr.io/org/app:1.0.1 #{\"$imagepolicy\":\"apps:podinfo\"}\n" +
				"b:\t1.0.1\t#   {  \"$imagepolicy\"  :  \" apps:podinfo:tag \"  }   \n" +
				"c: &tag !!str 1.0.1 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\n" +
				"d: *tag\n",
			changes: []Change{
				{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"},
				{OldValue: "1.0.0", NewValue: "1.0.1", Setter: "apps:podinfo:tag"},
				{OldValue: "1.0.0", NewValue: "1.0.1", Setter: "apps:podinfo:tag"},
			},
		},
		{
			name: "value on the line after its key, non-ASCII before it",
			in:   "labels: {team: équipe}\nimage:\n  ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n",
			want: "labels: {team: équipe}\nimage:\n  ghcr.io/org/app:1.0.1 # {\"$imagepolicy\": \"apps:podinfo\"}\n",
			changes: []Change{
				{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"},
			},
		},
		{
			name: "unselected policies, commented-out lines and block scalar text untouched",
			in: `image: ghcr.io/other/app:1.0.0 # {"$imagepolicy": "other:app"}
# image: ghcr.io/org/app:0.1.0 # {"$imagepolicy": "apps:podinfo"}
  #{"$imagepolicy": "apps:podinfo"}
notes: |
  tag: 0.1.0 # {"$imagepolicy": "apps:podinfo:tag"}
current: ghcr.io/org/app:1.0.1 # {"$imagepolicy": "apps:podinfo"}
`,
			want: `image: ghcr.io/other/app:1.0.0 # {"$imagepolicy": "other:app"}
# image: ghcr.io/org/app:0.1.0 # {"$imagepolicy": "apps:podinfo"}
  #{"$imagepolicy": "apps:podinfo"}
notes: |
  tag: 0.1.0 # {"$imagepolicy": "apps:podinfo:tag"}
current: ghcr.io/org/app:1.0.1 # {"$imagepolicy": "apps:podinfo"}
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := writeTree(t, map[string]string{"deploy.yaml": tc.in})
			res, err := ApplySetters(root, ".", testRefs)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(readTree(t, root, "deploy.yaml")).To(Equal(tc.want))
			g.Expect(res.Changes()).To(Equal(tc.changes))
			g.Expect(res.Empty()).To(Equal(len(tc.changes) == 0))

			again, err := ApplySetters(root, ".", testRefs)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.Empty()).To(BeTrue(), "a second run changes nothing")
			g.Expect(readTree(t, root, "deploy.yaml")).To(Equal(tc.want))
		})
	}
}

func TestApplySettersResultShape(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"apps/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  namespace: apps
spec:
  image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:podinfo"}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: backup
image: ghcr.io/org/pinned:1.0.0 # {"$imagepolicy": "apps:pinned"}
`,
		"apps/kustomization.yml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
images:
- name: app
  newTag: 1.0.0 # {"$imagepolicy": "apps:podinfo:tag"}
`,
		"values.yaml": "tag: 1.0.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\n",
	})
	res, err := ApplySetters(root, "", testRefs)
	g.Expect(err).NotTo(HaveOccurred())

	deploy := ObjectIdentifier{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "apps", Name: "podinfo"}
	cron := ObjectIdentifier{APIVersion: "batch/v1", Kind: "CronJob", Name: "backup"}
	kustomization := ObjectIdentifier{APIVersion: "kustomize.config.k8s.io/v1beta1", Kind: "Kustomization"}
	tagChange := Change{OldValue: "1.0.0", NewValue: "1.0.1", Setter: "apps:podinfo:tag"}
	g.Expect(res.FileChanges).To(Equal(map[string]ObjectChanges{
		"apps/deploy.yaml": {
			deploy: {{OldValue: "ghcr.io/org/app:1.0.0", NewValue: "ghcr.io/org/app:1.0.1", Setter: "apps:podinfo"}},
			cron:   {{OldValue: "ghcr.io/org/pinned:1.0.0", NewValue: "ghcr.io/org/pinned:2.0.0@" + testDigest, Setter: "apps:pinned"}},
		},
		"apps/kustomization.yml": {kustomization: {tagChange}},
		"values.yaml":            {ObjectIdentifier{}: {tagChange}},
	}))
	g.Expect(res.Objects()).To(HaveLen(4))
	g.Expect(res.Objects()).To(HaveKeyWithValue(ObjectIdentifier{}, []Change{tagChange}))
	g.Expect(res.Changes()).To(HaveLen(4))
	g.Expect(res.Policies()).To(Equal([]PolicyKey{pinned, podinfo}))
	g.Expect(deploy.String()).To(Equal("Deployment apps/podinfo"))
	g.Expect(res.Skipped).To(BeEmpty())
}

func TestApplySettersOnePolicy(t *testing.T) {
	g := NewWithT(t)
	in := "a: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n" +
		"b: ghcr.io/org/pinned:1.0.0 # {\"$imagepolicy\": \"apps:pinned\"}\n"
	root := writeTree(t, map[string]string{"x.yaml": in})

	res, err := ApplySetters(root, ".", map[PolicyKey]ImageRef{pinned: testRefs[pinned]})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Policies()).To(Equal([]PolicyKey{pinned}))
	g.Expect(readTree(t, root, "x.yaml")).To(Equal("a: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n" +
		"b: ghcr.io/org/pinned:2.0.0@" + testDigest + " # {\"$imagepolicy\": \"apps:pinned\"}\n"))
}

func TestApplySettersWritesOnlyChangedFilesKeepingMode(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"changed.yaml":   "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n",
		"current.yaml":   "image: ghcr.io/org/app:1.0.1 # {\"$imagepolicy\": \"apps:podinfo\"}\n",
		"unrelated.yaml": "a: b\n",
	})
	changed := filepath.Join(root, "changed.yaml")
	g.Expect(os.Chmod(changed, 0o640)).To(Succeed())
	before := map[string]os.FileInfo{}
	for _, name := range []string{"changed.yaml", "current.yaml", "unrelated.yaml"} {
		info, err := os.Stat(filepath.Join(root, name))
		g.Expect(err).NotTo(HaveOccurred())
		before[name] = info
	}

	res, err := ApplySetters(root, ".", testRefs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.FileChanges).To(HaveLen(1))
	g.Expect(res.FileChanges).To(HaveKey("changed.yaml"))

	for name, old := range before {
		info, err := os.Stat(filepath.Join(root, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode()).To(Equal(old.Mode()), name)
		g.Expect(os.SameFile(old, info)).To(Equal(name != "changed.yaml"), "only the changed file is replaced: %s", name)
	}
	entries, err := os.ReadDir(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(3), "no temporary file is left behind")
}

func TestApplySettersFileSelection(t *testing.T) {
	g := NewWithT(t)
	marked := "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
	updated := "image: ghcr.io/org/app:1.0.1 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
	root := writeTree(t, map[string]string{
		"UPPER.YAML":       marked,
		"mixed.Yml":        marked,
		"sub/dir/deep.yml": marked,
		"doc.json":         marked,
		"notes.txt":        marked,
		"yaml":             marked,
		".git/config.yaml": marked,
		"app/.git":         marked,
	})
	res, err := ApplySetters(root, ".", testRefs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.FileChanges).To(HaveLen(3))
	for _, name := range []string{"UPPER.YAML", "mixed.Yml", "sub/dir/deep.yml"} {
		g.Expect(res.FileChanges).To(HaveKey(name))
		g.Expect(readTree(t, root, name)).To(Equal(updated), name)
	}
	for _, name := range []string{"doc.json", "notes.txt", "yaml", ".git/config.yaml", "app/.git"} {
		g.Expect(readTree(t, root, name)).To(Equal(marked), name)
	}
}

func TestApplySettersSkipsLargeFiles(t *testing.T) {
	g := NewWithT(t)
	marked := "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
	large := marked + "# " + strings.Repeat("x", MaxFileSize) + "\n"
	root := writeTree(t, map[string]string{"large.yaml": large, "small.yaml": marked})

	res, err := ApplySetters(root, ".", testRefs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Skipped).To(Equal([]SkippedFile{{File: "large.yaml", Reason: "larger than 5 MiB, not read"}}))
	g.Expect(res.FileChanges).To(HaveKey("small.yaml"))
	g.Expect(readTree(t, root, "large.yaml")).To(Equal(large))
}
