package imagepolicy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzCompileAndSelect: whatever the spec and the tags, nothing panics, a
// rejected spec is an *InvalidSpecError, and the election agrees with Top,
// Better and the reversed input.
func FuzzCompileAndSelect(f *testing.F) {
	f.Add("^1.0", "", "", "", "", "v1.0.0\n1.2.3\n1.0.0\nlatest")
	f.Add("", "asc", "", `^RELEASE\.(?P<ts>.*)Z$`, "$ts", "RELEASE.2023-01-31T02-24-19Z\nRELEASE.2022-01-31T02-24-19Z")
	f.Add("", "", "desc", `^main-[a-f0-9]+-(\d+)`, "${1}", "main-ab-10\nmain-cd-9\nmain-ef-9.0\nx")
	f.Add("", "", "asc", "", "", "1\n1.0\nNaN\n-Inf\n1e400\n0x1p-2")
	f.Add(">>1", "", "", "", "", "1.0.0")
	f.Add("", "up", "asc", "([", "$1x", "")
	f.Add("*", "", "", `(?P<a>\d+)?`, "1.$a.$$0", "1\n2\n\n3.0.0")
	f.Fuzz(func(t *testing.T, semverRange, alphabetical, numerical, pattern, extract, tagLines string) {
		p, err := Compile(Spec{SemverRange: semverRange, Alphabetical: alphabetical, Numerical: numerical, FilterPattern: pattern, FilterExtract: extract})
		if err != nil {
			var invalid *InvalidSpecError
			if p != nil || !errors.As(err, &invalid) {
				t.Fatalf("Compile: policy %v, error %T %v", p, err, err)
			}
			return
		}
		_ = p.String()
		tags := strings.Split(tagLines, "\n")
		if len(tags) > 64 {
			tags = tags[:64]
		}
		checkElection(t, p, tags)
	})
}

// checkElection checks Latest against Top, Better and the reversed input.
func checkElection(t *testing.T, p *Policy, tags []string) {
	latest, err := p.Latest(slices.Values(tags))
	top := p.Top(slices.Values(tags), 3)
	if err != nil {
		if !errors.Is(err, ErrNoCandidate) || len(top) != 0 {
			t.Fatalf("Latest error %v, Top %q", err, top)
		}
		return
	}
	if len(top) == 0 || top[0] != latest || !p.Candidate(latest) {
		t.Fatalf("Latest %q, Top %q", latest, top)
	}
	for _, tag := range tags {
		if tag != latest && (p.Better(tag, latest) || p.Candidate(tag) && !p.Better(latest, tag)) {
			t.Fatalf("Latest %q does not rank above %q", latest, tag)
		}
	}
	reversed := slices.Clone(tags)
	slices.Reverse(reversed)
	if again, _ := p.Latest(slices.Values(reversed)); again != latest {
		t.Fatalf("Latest %q, of the reversed tags %q", latest, again)
	}
	if againTop := p.Top(slices.Values(reversed), 3); !slices.Equal(againTop, top) {
		t.Fatalf("Top %q, of the reversed tags %q", top, againTop)
	}
}
