package registry

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseImage feeds arbitrary text to ParseImage (an ImageRepository's
// spec.image) and parseTag (Digest's IMAGE:TAG). It asserts that every
// refusal is an *InvalidSpecError of the field image; that an accepted
// image holds no blank, scheme, digest or tag; that an accepted tag is a
// valid tag, the text after the last ':'; and the round trips: the
// canonical name parses back to itself, and a tag's full name to the same
// tag.
func FuzzParseImage(f *testing.F) {
	for _, s := range []string{
		"nginx", "docker.io/org/app", "ghcr.io/org/team/app", "localhost:5000/app", "", " ghcr.io/org/app",
		"ghcr.io/org/app:1.0", "nginx:latest", "localhost:5000", "https://ghcr.io/org/app", "ghcr.io/Org/App",
		"ghcr.io/org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"localhost:5000/app:v1", "ghcr.io/app:bad tag", "ghcr.io/app:-bad", "[::1]:5000/app:1.0", "index.docker.io/library/nginx",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		repo, err := ParseImage(s)
		if err != nil {
			fuzzCheckSpecError(t, "ParseImage", s, err)
		} else {
			if strings.ContainsAny(s, " \t\r\n@") || strings.Contains(s, "://") || strings.Contains(s[strings.LastIndex(s, "/")+1:], ":") {
				t.Fatalf("ParseImage accepted %q", s)
			}
			canonical := CanonicalName(repo)
			again, err := ParseImage(canonical)
			if err != nil || CanonicalName(again) != canonical {
				t.Fatalf("ParseImage(%q) is %q, which parses to %q, %v", s, canonical, CanonicalName(again), err)
			}
		}

		tag, err := parseTag(s, false)
		if err != nil {
			fuzzCheckSpecError(t, "parseTag", s, err)
			return
		}
		text := s[strings.LastIndex(s, ":")+1:]
		if !validTag(tag.TagStr()) || tag.TagStr() != text {
			t.Fatalf("parseTag(%q) has the tag %q, want %q", s, tag.TagStr(), text)
		}
		again, err := parseTag(tag.Name(), false)
		if err != nil || again.Name() != tag.Name() {
			t.Fatalf("parseTag(%q) is %q, which parses to %q, %v", s, tag.Name(), again.Name(), err)
		}
	})
}

// fuzzCheckSpecError fails t when err, of fn(s), is not an *InvalidSpecError
// of the field image.
func fuzzCheckSpecError(t *testing.T, fn, s string, err error) {
	t.Helper()
	var spec *InvalidSpecError
	if !errors.As(err, &spec) || spec.Field != "image" {
		t.Fatalf("%s(%q) failed with %T %v, not an *InvalidSpecError of image", fn, s, err, err)
	}
}
