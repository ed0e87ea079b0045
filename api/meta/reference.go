package meta

// LocalObjectReference names an object in the referrer's namespace.
type LocalObjectReference struct {
	// Name of the referent.
	// +required
	Name string `json:"name"`
}

// NamespacedObjectReference names an object in any namespace; an empty
// namespace means the referrer's own.
type NamespacedObjectReference struct {
	// Name of the referent.
	// +required
	Name string `json:"name"`

	// Namespace of the referent; defaults to the referrer's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// SecretKeyReference names one key of a Secret in the referrer's namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +required
	Name string `json:"name"`

	// Key in the Secret; when empty, a default key applies.
	// +optional
	Key string `json:"key,omitempty"`
}
