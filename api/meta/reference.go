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

// DependencyReference names an object this one depends on, and optionally
// how to tell that it is ready.
type DependencyReference struct {
	// Kind of the dependency: Kustomization or HelmRelease. Empty means the
	// dependent's own kind. (A Windlass extension: the reference API only
	// has dependencies of the same kind.)
	// +kubebuilder:validation:Enum=Kustomization;HelmRelease
	// +optional
	Kind string `json:"kind,omitempty"`

	// Name of the dependency.
	// +required
	Name string `json:"name"`

	// Namespace of the dependency; defaults to the dependent's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// ReadyExpr is a CEL expression over 'dep' (the dependency) and 'self'
	// (the dependent) that tells whether the dependency is ready. It
	// replaces the built-in readiness check.
	// +optional
	ReadyExpr string `json:"readyExpr,omitempty"`
}

// NamespacedObjectKindReference names an object of any kind in any
// namespace.
type NamespacedObjectKindReference struct {
	// APIVersion of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent.
	// +required
	Kind string `json:"kind"`

	// Name of the referent.
	// +required
	Name string `json:"name"`

	// Namespace of the referent; defaults to the referrer's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// KubeConfigReference names the kubeconfig of a remote cluster: exactly one
// of SecretRef and ConfigMapRef. Windlass serves SecretRef only; an object
// with ConfigMapRef is stalled, never applied to the local cluster.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) || has(self.configMapRef)",message="exactly one of spec.kubeConfig.secretRef or spec.kubeConfig.configMapRef must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.secretRef) || !has(self.configMapRef)",message="exactly one of spec.kubeConfig.secretRef or spec.kubeConfig.configMapRef must be set"
type KubeConfigReference struct {
	// SecretRef names a Secret holding the kubeconfig, under Key ('value' or
	// 'value.yaml' by default).
	// +optional
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`

	// ConfigMapRef names a ConfigMap that describes how to reach the cluster
	// with workload identity. Not served by Windlass: an object that sets it
	// is stalled (reason UnsupportedKubeConfig); use SecretRef.
	// +optional
	ConfigMapRef *LocalObjectReference `json:"configMapRef,omitempty"`
}
