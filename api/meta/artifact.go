package meta

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Artifact is the output of a source reconciliation: a file in the source
// controller's storage, addressable by URL and identified by revision and
// digest.
type Artifact struct {
	// Path is the relative file path of the artifact in storage:
	// <kind>/<namespace>/<name>/<file>.
	// +required
	Path string `json:"path"`

	// URL is the HTTP address of the artifact as served by the source
	// controller's storage server.
	// +required
	URL string `json:"url"`

	// Revision is a human-readable identifier of the source's state, for
	// example a Git branch and commit: main@sha1:<hex>.
	// +required
	Revision string `json:"revision"`

	// Digest is the digest of the file, in the form '<algorithm>:<checksum>'.
	// +optional
	// +kubebuilder:validation:Pattern="^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$"
	Digest string `json:"digest,omitempty"`

	// LastUpdateTime is when the artifact was last updated.
	// +required
	LastUpdateTime metav1.Time `json:"lastUpdateTime"`

	// Size is the number of bytes in the file.
	// +optional
	Size *int64 `json:"size,omitempty"`

	// Metadata holds upstream information such as OCI annotations.
	// +optional
	Metadata map[string]string `json:"metadata,omitempty"`
}

// HasRevision reports whether the artifact is for the given revision.
func (in *Artifact) HasRevision(revision string) bool {
	return in != nil && in.Revision == revision
}

// HasDigest reports whether the artifact has the given digest.
func (in *Artifact) HasDigest(digest string) bool {
	return in != nil && in.Digest == digest
}

// FileName returns the last element of the artifact's path.
func (in *Artifact) FileName() string {
	if in == nil {
		return ""
	}
	return in.Path[strings.LastIndex(in.Path, "/")+1:]
}

// Metadata keys of an artifact pulled from an OCI registry: the manifest
// annotations that name what the artifact was made from.
const (
	// OriginRevisionKey is the revision of the origin, such as the Git
	// commit the artifact was built from.
	OriginRevisionKey = "org.opencontainers.image.revision"
	// OriginSourceKey is the URL of the origin.
	OriginSourceKey = "org.opencontainers.image.source"
)

// OriginRevision returns the revision of what the artifact was made from,
// when its metadata says; else "".
func (in *Artifact) OriginRevision() string {
	if in == nil {
		return ""
	}
	return in.Metadata[OriginRevisionKey]
}
