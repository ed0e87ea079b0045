package build

// Options are the overlay fields of a Kustomization, in domain terms. Build
// applies them on top of the user's kustomization.
type Options struct {
	// Patches are strategic merge or JSON 6902 patches, each optionally
	// restricted to the objects matched by a target selector.
	Patches []Patch
	// Images override image names, tags and digests.
	Images []Image
	// Components are paths to kustomize components, relative to the
	// Kustomization's path.
	Components []string
	// IgnoreMissingComponents skips components whose directory does not
	// exist instead of failing the build.
	IgnoreMissingComponents bool
	// NamePrefix is prepended to the name of every object.
	NamePrefix string
	// NameSuffix is appended to the name of every object.
	NameSuffix string
	// TargetNamespace sets the namespace of every namespaced object.
	TargetNamespace string
	// CommonMetadata holds labels and annotations set on every object's
	// metadata (never on selectors or templates).
	CommonMetadata *CommonMetadata
	// BuildMetadata asks kustomize to record build metadata on every
	// object: "originAnnotations" (config.kubernetes.io/origin, the file an
	// object came from, relative to the artifact root) and
	// "transformerAnnotations" (alpha.config.kubernetes.io/transformations).
	BuildMetadata []string
	// Files are served in place of files inside the root, or beside them,
	// by absolute, symlink-free path: a generated kustomization, decrypted
	// generator files. The root itself is only read.
	Files map[string][]byte
	// NoRemoteBases forbids remote bases. Remote references are refused in
	// every case (see the package documentation); this flag only makes the
	// error say that the lockdown flag forbids them.
	NoRemoteBases bool
}

// Patch is a strategic merge patch or a JSON 6902 patch (a list of
// operations), written in YAML or JSON.
type Patch struct {
	// Patch is the content of the patch.
	Patch string
	// Target selects the objects to patch. When nil, a strategic merge
	// patch applies to the object it names.
	Target *Selector
}

// Selector matches objects by group, version, kind, name and namespace
// (regular expressions, anchored), and by label and annotation selectors.
type Selector struct {
	// Group is the API group.
	Group string
	// Version is the API version.
	Version string
	// Kind is the object kind.
	Kind string
	// Name is the object name.
	Name string
	// Namespace is the object namespace.
	Namespace string
	// LabelSelector is a Kubernetes label selector expression.
	LabelSelector string
	// AnnotationSelector is a label selector expression matched against
	// annotations.
	AnnotationSelector string
}

// Image overrides the name, tag or digest of the container images named
// Name.
type Image struct {
	// Name is the image name to match, without tag.
	Name string
	// NewName replaces the image name.
	NewName string
	// NewTag replaces the tag.
	NewTag string
	// Digest replaces the tag with a digest; it takes precedence over
	// NewTag.
	Digest string
}

// CommonMetadata holds the labels and annotations set on every object.
type CommonMetadata struct {
	// Labels are set on metadata.labels.
	Labels map[string]string
	// Annotations are set on metadata.annotations.
	Annotations map[string]string
}
