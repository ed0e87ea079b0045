package archive

import "hash/maphash"

// Fingerprints are fingerprints of the directories of a tree that
// BuildWithFingerprints archived, by slash-separated path from the root
// ("" for the root itself). A directory's fingerprint changes when anything
// written under it changes: a file's content or mode, a name, an entry
// added or removed. They tell which parts of a tree changed between two
// archives built by the same process, and mean nothing to another one.
type Fingerprints map[string]uint64

// maxFingerprints bounds the directories a tree may have for
// BuildWithFingerprints to return their fingerprints: a larger tree gets
// none, so that what is kept of it stays small. Tests lower it.
var maxFingerprints = 20000

// fingerprintSeed seeds every fingerprint of the process.
var fingerprintSeed = maphash.MakeSeed()

// Changed reports whether the directory at path differs between the trees
// of f and g: one of them lacks it, or its fingerprints differ.
func (f Fingerprints) Changed(g Fingerprints, path string) bool {
	a, inF := f[path]
	b, inG := g[path]
	return inF != inG || a != b
}
