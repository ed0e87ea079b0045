package imagepolicy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

func mustCompile(g Gomega, s Spec) *Policy {
	p, err := Compile(s)
	g.Expect(err).NotTo(HaveOccurred())
	return p
}

// TestLatest: each policy elects the tag its order ranks highest, and
// returns the original tag, not the extracted value.
func TestLatest(t *testing.T) {
	const ts = `^main-[a-f0-9]+-(?P<ts>[0-9]+)$`
	minio := []string{"RELEASE.2023-01-31T02-24-19Z", "RELEASE.2023-02-10T18-48-39Z", "RELEASE.2022-12-12T19-27-27Z", "latest"}
	tests := []struct {
		name string
		spec Spec
		tags []string
		want string
	}{
		{"semver highest in range", Spec{SemverRange: "^1.0"}, []string{"v1.0.0", "1.2.3", "1.10.0", "2.0.0", "1.11.0-rc.1", "latest", "main-abc"}, "1.10.0"},
		{"semver orders numbers, not strings", Spec{SemverRange: "*"}, []string{"v2.0.0", "v10.0.0", "v9.9.9"}, "v10.0.0"},
		{"semver prereleases when the range names one", Spec{SemverRange: ">=1.0.0-0"}, []string{"1.0.0-rc.1", "1.0.0-rc.2", "0.9.0"}, "1.0.0-rc.2"},
		{"semver coerces short versions", Spec{SemverRange: "~1.2"}, []string{"1.2", "1.2.1", "1.3"}, "1.2.1"},
		{"semver on an extracted value", Spec{SemverRange: ">=1", FilterPattern: `^app-(?P<v>.+)$`, FilterExtract: "$v"}, []string{"app-1.2.0", "app-1.10.0", "other-9.0.0"}, "app-1.10.0"},
		{"semver on a built value", Spec{SemverRange: "^1", FilterPattern: `^rel-(?P<minor>\d+)$`, FilterExtract: "1.${minor}.0"}, []string{"rel-3", "rel-12", "rel-x"}, "rel-12"},
		{"semver filter without extract", Spec{SemverRange: "*", FilterPattern: `^v1\.`}, []string{"v1.2", "v1.10", "v2.0"}, "v1.10"},
		{"alphabetical asc", Spec{Alphabetical: "asc"}, []string{"a", "c", "b"}, "c"},
		{"alphabetical desc", Spec{Alphabetical: "desc"}, []string{"b", "a", "c"}, "a"},
		{"alphabetical asc on timestamps", Spec{Alphabetical: "asc", FilterPattern: `^RELEASE\.(?P<ts>.*)Z$`, FilterExtract: "$ts"}, minio, "RELEASE.2023-02-10T18-48-39Z"},
		{"alphabetical desc on timestamps", Spec{Alphabetical: "desc", FilterPattern: `^RELEASE\.(?P<ts>.*)Z$`, FilterExtract: "$ts"}, minio, "RELEASE.2022-12-12T19-27-27Z"},
		{"alphabetical ignores empty values", Spec{Alphabetical: "desc", FilterPattern: `^build(-(?P<s>[a-z]+))?$`, FilterExtract: "$s"}, []string{"build", "build-b", "build-a"}, "build-a"},
		{"numerical asc orders numbers, not strings", Spec{Numerical: "asc"}, []string{"1", "10", "9", "2.5", "x"}, "10"},
		{"numerical desc", Spec{Numerical: "desc"}, []string{"1", "10", "-2.5", "x"}, "-2.5"},
		{"numerical named group", Spec{Numerical: "asc", FilterPattern: ts, FilterExtract: "$ts"}, []string{"main-abc123-1700000000", "main-def456-1700000500", "main-0a1b-99", "dev-1-1800000000"}, "main-def456-1700000500"},
		{"numerical numbered group desc", Spec{Numerical: "desc", FilterPattern: `^main-[a-f0-9]+-([0-9]+)$`, FilterExtract: "${1}"}, []string{"main-abc123-1700000000", "main-0a1b-99", "main-def456-1700000500"}, "main-0a1b-99"},
		{"numerical ignores NaN and infinities", Spec{Numerical: "asc"}, []string{"NaN", "Inf", "+Inf", "infinity", "1e400", "3", "2"}, "3"},
		{"numerical desc ignores negative infinities", Spec{Numerical: "desc"}, []string{"-Inf", "-1e400", "3", "4"}, "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := mustCompile(g, tt.spec)
			got, err := p.Latest(slices.Values(tt.tags))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			g.Expect(p.Candidate(got)).To(BeTrue())
		})
	}
}

// TestTiesAreOrderIndependent: candidates of equal value are ranked by the
// greater original tag, whatever the order they come in and whatever the
// policy's order.
func TestTiesAreOrderIndependent(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		tags    []string
		wantTop []string
	}{
		{"equal versions", Spec{SemverRange: "*"}, []string{"1.0.0", "v1.0.0", "1.0.0+b", "1.0.0+a", "0.1.0"}, []string{"v1.0.0", "1.0.0+b", "1.0.0+a", "1.0.0", "0.1.0"}},
		{"equal numbers asc", Spec{Numerical: "asc"}, []string{"1", "1.0", "01", "1e0", "0.5"}, []string{"1e0", "1.0", "1", "01", "0.5"}},
		{"equal numbers desc", Spec{Numerical: "desc"}, []string{"1", "1.0", "01", "1e0", "2"}, []string{"1e0", "1.0", "1", "01", "2"}},
		{"equal extracted values", Spec{Alphabetical: "asc", FilterPattern: `^(?P<v>[a-z]+)-\d+$`, FilterExtract: "$v"}, []string{"b-1", "b-2", "a-9", "b-10"}, []string{"b-2", "b-10", "b-1", "a-9"}},
		{"equal extracted values desc", Spec{Alphabetical: "desc", FilterPattern: `^(?P<v>[a-z]+)-\d+$`, FilterExtract: "$v"}, []string{"b-1", "a-2", "a-10"}, []string{"a-2", "a-10", "b-1"}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := mustCompile(g, tt.spec)
			tags := slices.Clone(tt.tags)
			for range 50 {
				rng.Shuffle(len(tags), func(i, j int) { tags[i], tags[j] = tags[j], tags[i] })
				g.Expect(p.Top(slices.Values(tags), len(tags))).To(Equal(tt.wantTop), "input %q", tags)
				g.Expect(p.Latest(slices.Values(tags))).To(Equal(tt.wantTop[0]), "input %q", tags)
			}
		})
	}
}

// TestTop: the n best candidates, best first, each tag once.
func TestTop(t *testing.T) {
	tags := []string{"1.2.0", "latest", "1.10.0", "1.3.0", "1.10.0", "0.9.0", "2.0.0"}
	tests := []struct {
		name string
		n    int
		want []string
	}{
		{"fewer than the candidates", 2, []string{"1.10.0", "1.3.0"}},
		{"as many as the candidates", 4, []string{"1.10.0", "1.3.0", "1.2.0", "0.9.0"}},
		{"more than the candidates", 10, []string{"1.10.0", "1.3.0", "1.2.0", "0.9.0"}},
		{"one", 1, []string{"1.10.0"}},
		{"zero", 0, nil},
		{"negative", -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := mustCompile(g, Spec{SemverRange: "<2"})
			g.Expect(p.Top(slices.Values(tags), tt.n)).To(Equal(tt.want))
		})
	}
}

// TestNoCandidate: the error counts the tags and names the policy.
func TestNoCandidate(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("1.%d.0", i)
	}
	tests := []struct {
		name string
		spec Spec
		tags []string
		want string
	}{
		{"semver", Spec{SemverRange: ">=9.0.0"}, many, `no tag of 1000 matches semver ">=9.0.0"`},
		{"no tags", Spec{Alphabetical: "asc"}, nil, "no tag of 0 matches alphabetical asc"},
		{"filter", Spec{Numerical: "asc", FilterPattern: `^main-(?P<ts>\d+)$`, FilterExtract: "$ts"}, []string{"main-x", "dev-1"}, `no tag of 2 matches numerical asc, filter "^main-(?P<ts>\\d+)$" extract "$ts"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p := mustCompile(g, tt.spec)
			got, err := p.Latest(slices.Values(tt.tags))
			g.Expect(got).To(BeEmpty())
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(errors.Is(err, ErrNoCandidate)).To(BeTrue())
			var nc *NoCandidateError
			g.Expect(errors.As(err, &nc)).To(BeTrue())
			g.Expect(nc.Seen).To(Equal(len(tt.tags)))
			g.Expect(p.Top(slices.Values(tt.tags), 3)).To(BeEmpty())
		})
	}
}

// TestSelector: the counts, and the result of an election without
// candidates.
func TestSelector(t *testing.T) {
	g := NewWithT(t)
	p := mustCompile(g, Spec{Numerical: "asc"})
	s := p.NewSelector()
	_, ok := s.Latest()
	g.Expect(ok).To(BeFalse())
	for _, tag := range []string{"3", "x", "7", "7", "", "5"} {
		s.Offer(tag)
	}
	tag, ok := s.Latest()
	g.Expect(ok).To(BeTrue())
	g.Expect(tag).To(Equal("7"))
	g.Expect(s.Considered()).To(Equal(4))
	g.Expect(s.Seen()).To(Equal(6))
}

// TestBetterAndCandidate: non-candidates rank below every candidate.
func TestBetterAndCandidate(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"main-1-20", "main-2-10", true},
		{"main-2-10", "main-1-20", false},
		{"main-1-20", "main-1-20", false},
		{"main-1-20", "dev-1", true},
		{"dev-1", "main-1-20", false},
		{"dev-1", "dev-2", false},
	}
	p := mustCompile(NewWithT(t), Spec{Numerical: "asc", FilterPattern: `^main-\d+-(?P<ts>\d+)$`, FilterExtract: "$ts"})
	for _, tt := range tests {
		t.Run(tt.a+" vs "+tt.b, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(p.Better(tt.a, tt.b)).To(Equal(tt.want))
			g.Expect(p.Candidate(tt.a)).To(Equal(tt.a != "dev-1"))
		})
	}
}

// TestManyTagsMatchAFullSort: over 100 000 tags (with duplicates and
// non-candidates), Top, Latest and the Selector agree with sorting every
// candidate.
func TestManyTagsMatchAFullSort(t *testing.T) {
	tags := manyTags(100_000)
	specs := []Spec{
		{SemverRange: ">=1.0.0 <40.0.0"},
		{Alphabetical: "asc"},
		{Alphabetical: "desc", FilterPattern: `^build-(?P<id>[a-z0-9]+)-\d+$`, FilterExtract: "$id"},
		{Numerical: "asc", FilterPattern: `^main-[a-f0-9]+-(?P<ts>\d+)$`, FilterExtract: "$ts"},
		{Numerical: "desc"},
	}
	for _, spec := range specs {
		p := mustCompile(NewWithT(t), spec)
		t.Run(p.String(), func(t *testing.T) {
			g := NewWithT(t)
			sorted, offered := sortAll(p, tags)
			g.Expect(len(sorted)).To(BeNumerically(">", 1000))

			g.Expect(p.Top(slices.Values(tags), 10)).To(Equal(sorted[:10]))
			g.Expect(p.Top(slices.Values(tags), len(sorted)+5)).To(Equal(sorted))
			g.Expect(p.Latest(slices.Values(tags))).To(Equal(sorted[0]))

			s := p.NewSelector()
			for _, tag := range tags {
				s.Offer(tag)
			}
			latest, ok := s.Latest()
			g.Expect(ok).To(BeTrue())
			g.Expect(latest).To(Equal(sorted[0]))
			g.Expect(s.Considered()).To(Equal(offered))
			g.Expect(s.Seen()).To(Equal(len(tags)))
		})
	}
}

// sortAll sorts every distinct candidate of tags, best first, and counts
// the candidates offered (duplicates included).
func sortAll(p *Policy, tags []string) (sorted []string, offered int) {
	var all []candidate
	for _, tag := range tags {
		if c, ok := p.candidate(tag); ok {
			all = append(all, c)
		}
	}
	offered = len(all)
	slices.SortFunc(all, func(a, b candidate) int { return p.compare(b, a) })
	all = slices.CompactFunc(all, func(a, b candidate) bool { return a.tag == b.tag })
	for _, c := range all {
		sorted = append(sorted, c.tag)
	}
	return sorted, offered
}

// manyTags makes n tags of several schemes, some repeated, in a fixed
// pseudo-random order.
func manyTags(n int) []string {
	rng := rand.New(rand.NewPCG(17, 42))
	tags := make([]string, 0, n)
	for len(tags) < n {
		switch rng.IntN(6) {
		case 0:
			tags = append(tags, fmt.Sprintf("v%d.%d.%d", rng.IntN(50), rng.IntN(20), rng.IntN(20)))
		case 1:
			tags = append(tags, fmt.Sprintf("%d.%d.%d-rc.%d", rng.IntN(50), rng.IntN(20), rng.IntN(20), rng.IntN(5)))
		case 2:
			tags = append(tags, fmt.Sprintf("main-%07x-%d", rng.Uint32()>>4, 1_700_000_000+rng.IntN(1_000_000)))
		case 3:
			tags = append(tags, fmt.Sprintf("build-%x-%d", rng.IntN(4096), rng.IntN(100)))
		case 4:
			tags = append(tags, fmt.Sprintf("%g", rng.NormFloat64()*1000))
		default:
			if len(tags) > 0 {
				tags = append(tags, tags[rng.IntN(len(tags))])
			}
		}
	}
	return tags
}
