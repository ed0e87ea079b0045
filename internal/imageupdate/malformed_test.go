package imageupdate

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestMalformedMarkers(t *testing.T) {
	refs := maps.Clone(testRefs)
	refs[PolicyKey{Namespace: "apps", Name: "notag"}] = ImageRef{Name: "ghcr.io/org/app"}
	refs[PolicyKey{Namespace: "apps", Name: "noname"}] = ImageRef{Tag: "1.0.0"}
	refs[PolicyKey{Namespace: "apps", Name: "badtag"}] = ImageRef{Name: "ghcr.io/org/app", Tag: "1.0 # x"}
	refs[PolicyKey{Namespace: "apps", Name: "baddigest"}] = ImageRef{Name: "ghcr.io/org/app", Tag: "1", Digest: "sha256:'x'"}
	refs[PolicyKey{Namespace: "apps", Name: "badname"}] = ImageRef{Name: "ghcr.io/org/app\"", Tag: "1"}

	for _, tc := range []struct {
		name   string
		in     string
		line   int
		reason string
	}{
		{"unclosed JSON", "a: 1\nb: x # {\"$imagepolicy\": \"apps:podinfo\"\n", 2, "not valid JSON"},
		{"unquoted JSON", "b: x # {$imagepolicy: apps:podinfo}\n", 1, "not valid JSON"},
		{"not an object", "b: x # \"$imagepolicy\": \"apps:podinfo\"\n", 1, "not a JSON object"},
		{"value not a string", "b: x # {\"$imagepolicy\": 3}\n", 1, "must be a JSON string"},
		{"unexpected key", "b: x # {\"$imagepolicy\": \"apps:podinfo\", \"x\": 1}\n", 1, `unexpected key "x"`},
		{"key twice", "b: x # {\"$imagepolicy\": \"apps:podinfo\", \"$imagepolicy\": \"apps:podinfo\"}\n", 1, "twice"},
		{"text after the object", "b: x # {\"$imagepolicy\": \"apps:podinfo\"} see docs\n", 1, "text after"},
		{"reference without namespace", "b: x # {\"$imagepolicy\": \"podinfo\"}\n", 1, "is not <namespace>:<policy>"},
		{"reference too long", "b: x # {\"$imagepolicy\": \"apps:podinfo:tag:x\"}\n", 1, "is not <namespace>:<policy>"},
		{"unknown suffix", "b: x # {\"$imagepolicy\": \"apps:podinfo:version\"}\n", 1, `unknown suffix "version"`},
		{"invalid namespace", "b: x # {\"$imagepolicy\": \"Apps:podinfo\"}\n", 1, "invalid namespace"},
		{"invalid policy name", "b: x # {\"$imagepolicy\": \"apps:pod_info\"}\n", 1, "invalid policy name"},
		{"block scalar", "a: | # {\"$imagepolicy\": \"apps:podinfo\"}\n  text\n", 1, "block scalar"},
		{"folded scalar of an unselected policy", "a: >- # {\"$imagepolicy\": \"other:app\"}\n  text\n", 1, "block scalar"},
		{"flow map", "a: {b: c} # {\"$imagepolicy\": \"apps:podinfo\"}\n", 1, "collection"},
		{"flow sequence", "a: [b, c] # {\"$imagepolicy\": \"apps:podinfo\"}\n", 1, "collection"},
		{"item of a multi-line flow sequence", "a: [\n  b, # {\"$imagepolicy\": \"apps:podinfo\"}\n  c]\n", 2, "inside a flow collection"},
		{"key with no value", "a: # {\"$imagepolicy\": \"apps:podinfo\"}\nb: 1\n", 1, "key with no value"},
		{"key with the value on the next line", "a: # {\"$imagepolicy\": \"apps:podinfo\"}\n  x\n", 1, "key with no value"},
		{"empty list item", "- # {\"$imagepolicy\": \"apps:podinfo\"}\n- x\n", 1, "not on a scalar value"},
		{"document start", "x: 1\n--- # {\"$imagepolicy\": \"apps:podinfo\"}\na: 1\n", 2, "not on a scalar value"},
		{"alias", "a: &x foo\nb: *x # {\"$imagepolicy\": \"apps:podinfo\"}\n", 2, "alias"},
		{"multi-line plain value", "a: foo\n  bar # {\"$imagepolicy\": \"apps:podinfo\"}\n", 1, "spans several lines"},
		{"multi-line quoted value", "a: \"foo\n  bar\" # {\"$imagepolicy\": \"apps:podinfo\"}\n", 1, "continues on the next line"},
		{"invalid YAML", "a: [\nb: x # {\"$imagepolicy\": \"apps:podinfo\"}\n", 0, "not valid YAML"},
		{"digest marker without digest", "d: x # {\"$imagepolicy\": \"apps:podinfo:digest\"}\n", 1, "has no digest"},
		{"empty tag", "t: x # {\"$imagepolicy\": \"apps:notag:tag\"}\n", 1, "has no tag"},
		{"empty tag in a full reference", "t: x # {\"$imagepolicy\": \"apps:notag\"}\n", 1, "has no tag"},
		{"empty name", "t: x # {\"$imagepolicy\": \"apps:noname:name\"}\n", 1, "has no image name"},
		{"invalid tag", "t: x # {\"$imagepolicy\": \"apps:badtag:tag\"}\n", 1, "invalid tag"},
		{"invalid digest", "t: x # {\"$imagepolicy\": \"apps:baddigest\"}\n", 1, "invalid digest"},
		{"invalid name", "t: x # {\"$imagepolicy\": \"apps:badname:name\"}\n", 1, "invalid image name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			good := "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
			root := writeTree(t, map[string]string{"bad.yaml": tc.in, "good.yaml": good})

			res, err := ApplySetters(root, ".", refs)
			g.Expect(res).To(BeNil())
			var malformed *MalformedMarkersError
			g.Expect(errors.As(err, &malformed)).To(BeTrue(), "error: %v", err)
			g.Expect(malformed.Markers).To(HaveLen(1))
			m := malformed.Markers[0]
			g.Expect(m.File).To(Equal("bad.yaml"))
			g.Expect(m.Line).To(Equal(tc.line))
			g.Expect(m.Reason).To(ContainSubstring(tc.reason))

			g.Expect(readTree(t, root, "bad.yaml")).To(Equal(tc.in))
			g.Expect(readTree(t, root, "good.yaml")).To(Equal(good), "nothing is written when a marker is malformed")
		})
	}
}

func TestMalformedMarkersListsAll(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"a.yaml": "x: 1\ny: z # {\"$imagepolicy\": \"apps\"}\nw: | # {\"$imagepolicy\": \"apps:podinfo\"}\n  t\n",
		"b/c.yaml": "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n" +
			"tag: 1 # {\"$imagepolicy\": \"apps:podinfo:sha\"}\n",
	})
	_, err := ApplySetters(root, ".", testRefs)
	var malformed *MalformedMarkersError
	g.Expect(errors.As(err, &malformed)).To(BeTrue())
	g.Expect(malformed.Markers).To(HaveLen(3))
	g.Expect(err.Error()).To(HavePrefix("3 image policy marker(s) cannot be applied: a.yaml:2: "))
	g.Expect(err.Error()).To(ContainSubstring("; a.yaml:3: the marked value is a block scalar"))
	g.Expect(err.Error()).To(ContainSubstring("; b/c.yaml:2: reference \"apps:podinfo:sha\""))

	var one *MarkerError
	g.Expect(errors.As(err, &one)).To(BeTrue())
	g.Expect(one.File).To(Equal("a.yaml"))
	g.Expect(readTree(t, root, "b/c.yaml")).To(HavePrefix("image: ghcr.io/org/app:1.0.0 "))
}

func TestMalformedMarkersErrorIsBounded(t *testing.T) {
	g := NewWithT(t)
	e := &MalformedMarkersError{}
	for i := range 25 {
		e.Markers = append(e.Markers, &MarkerError{File: "f.yaml", Line: i + 1, Reason: "bad"})
	}
	g.Expect(e.Error()).To(ContainSubstring("f.yaml:10: bad; and 15 more"))
	g.Expect(e.Error()).NotTo(ContainSubstring("f.yaml:11:"))
	g.Expect((&MarkerError{File: "f.yaml", Reason: "not YAML"}).Error()).To(Equal("f.yaml: not YAML"))
}

func TestUpdatePath(t *testing.T) {
	marked := "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
	for _, tc := range []struct {
		path string
		err  string
	}{
		{"/etc", "must be relative"},
		{"..", "leaves the repository root"},
		{"../x", "leaves the repository root"},
		{"apps/../../x", "leaves the repository root"},
		{"missing", "does not exist"},
		{"link", "goes through a symbolic link"},
		{"link/deploy.yaml", "goes through a symbolic link"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			g := NewWithT(t)
			root := writeTree(t, map[string]string{"apps/deploy.yaml": marked})
			g.Expect(os.Symlink("apps", filepath.Join(root, "link"))).To(Succeed())
			_, err := ApplySetters(root, tc.path, testRefs)
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
			g.Expect(readTree(t, root, "apps/deploy.yaml")).To(Equal(marked))
		})
	}
}

func TestUpdatePathLimitsTheWalk(t *testing.T) {
	marked := "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
	for _, path := range []string{"apps", "./apps/", "other/../apps", "apps/deploy.yaml"} {
		t.Run(path, func(t *testing.T) {
			g := NewWithT(t)
			root := writeTree(t, map[string]string{"apps/deploy.yaml": marked, "infra/deploy.yaml": marked})
			res, err := ApplySetters(root, path, testRefs)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.FileChanges).To(HaveLen(1))
			g.Expect(res.FileChanges).To(HaveKey("apps/deploy.yaml"), "keys are relative to the root, not the path")
			g.Expect(readTree(t, root, "infra/deploy.yaml")).To(Equal(marked))
		})
	}
}

func TestSymlinksAreNotFollowed(t *testing.T) {
	g := NewWithT(t)
	marked := "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
	updated := "image: ghcr.io/org/app:1.0.1 # {\"$imagepolicy\": \"apps:podinfo\"}\n"
	outside := writeTree(t, map[string]string{"out.yaml": marked})
	root := writeTree(t, map[string]string{"real/app.yaml": marked})
	links := map[string]string{
		"outside-file.yaml": filepath.Join(outside, "out.yaml"),
		"outside-dir":       outside,
		"inside-file.yaml":  filepath.Join(root, "real", "app.yaml"),
		"inside-dir":        "real",
	}
	for name, target := range links {
		g.Expect(os.Symlink(target, filepath.Join(root, name))).To(Succeed())
	}

	res, err := ApplySetters(root, ".", testRefs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.FileChanges).To(HaveLen(1))
	g.Expect(res.FileChanges).To(HaveKey("real/app.yaml"))
	g.Expect(res.Changes()).To(HaveLen(1), "a file reached through a link is not updated a second time")
	g.Expect(readTree(t, root, "real/app.yaml")).To(Equal(updated))
	g.Expect(readTree(t, outside, "out.yaml")).To(Equal(marked), "never written through a link")
	for name, target := range links {
		info, err := os.Lstat(filepath.Join(root, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode()&os.ModeSymlink).NotTo(BeZero(), "%s is still a link", name)
		got, err := os.Readlink(filepath.Join(root, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(target))
	}
	var skipped []string
	for _, s := range res.Skipped {
		skipped = append(skipped, s.File)
		g.Expect(s.Reason).To(Equal("symbolic link, not followed"))
	}
	g.Expect(skipped).To(ConsistOf("outside-file.yaml", "outside-dir", "inside-file.yaml", "inside-dir"))
}
