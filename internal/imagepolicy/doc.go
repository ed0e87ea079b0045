// Package imagepolicy elects the latest tag of an image by the rule of an
// ImagePolicy (image.toolkit.fluxcd.io/v1): a semver range, an
// alphabetical order or a numerical order, with an optional filterTags
// regular expression that selects the tags and extracts the value that is
// ordered. It is pure domain logic: the controller converts the API type
// into a Spec, compiles it once with Compile and feeds the policy the tags
// an ImageRepository scan stored.
//
// Using it:
//
//	p, err := imagepolicy.Compile(imagepolicy.Spec{SemverRange: "^1.0"})
//	// err is an *InvalidSpecError: the object is wrong, retrying mends nothing
//	tag, err := p.Latest(tags) // err is a *NoCandidateError when no tag fits
//	top := p.Top(tags, 10)     // the 10 best tags, best first
//
// A tag is a candidate when it matches filterTags.pattern (when there is
// one) and its value, the tag itself or the expansion of
// filterTags.extract, parses for the policy: as a semantic version that
// satisfies the range (Masterminds/semver/v3 NewVersion and Constraints,
// so prereleases only satisfy ranges that name a prerelease), as a finite
// float64 (strconv.ParseFloat), or as any non-empty string. Every other tag
// is ignored, never an error: registries hold tags of many schemes.
//
// Safety reasoning:
//   - Memory stays bounded whatever the number of tags: a Selector keeps one
//     candidate, Top keeps n of them in a heap, and the tags come as an
//     iter.Seq so they can be streamed from storage.
//   - The election never depends on the order of the tags: candidates of
//     equal value (v1.0.0 and 1.0.0, 1 and 1.0, two equal extracted values)
//     are told apart by the greater original tag, so the order is total.
//   - Patterns are Go RE2 regular expressions, matched in time linear in the
//     tag: a pattern from an object cannot make a scan hang.
//   - The extract template is checked at Compile against the pattern's
//     groups, so "$1x" (the group named "1x", not group 1 and "x") or a
//     misspelt name is a Stalled object instead of a silently empty value.
//   - A compiled Policy is immutable and safe for concurrent use; a Selector
//     is not (one per election).
package imagepolicy
