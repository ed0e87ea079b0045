package v1

// Condition reasons of Kustomizations, beside the shared ones of api/meta.
const (
	// ReconciliationSucceededReason: the manifests were applied.
	ReconciliationSucceededReason string = "ReconciliationSucceeded"
	// ReconciliationFailedReason: applying failed.
	ReconciliationFailedReason string = "ReconciliationFailed"
	// ArtifactFailedReason: the source artifact could not be fetched.
	ArtifactFailedReason string = "ArtifactFailed"
	// BuildFailedReason: kustomize build failed.
	BuildFailedReason string = "BuildFailed"
	// DecryptionFailedReason: SOPS decryption failed.
	DecryptionFailedReason string = "DecryptionFailed"
	// SubstitutionFailedReason: post-build substitution failed.
	SubstitutionFailedReason string = "SubstitutionFailed"
	// ValidationFailedReason: the server-side dry run refused an object.
	ValidationFailedReason string = "ValidationFailed"
	// PruneFailedReason: an object could not be pruned.
	PruneFailedReason string = "PruneFailed"
	// HealthCheckFailedReason: the health checks failed.
	HealthCheckFailedReason string = "HealthCheckFailed"
	// HealthCheckCanceledReason: a new revision cancelled the health checks.
	HealthCheckCanceledReason string = "HealthCheckCanceled"
	// DependencyNotReadyReason: a dependency is not ready.
	DependencyNotReadyReason string = "DependencyNotReady"
	// AccessDeniedReason: a cross-namespace reference is refused.
	AccessDeniedReason string = "AccessDenied"
	// EmptySourceReason: the revision builds to no objects, and pruning
	// everything was not allowed.
	EmptySourceReason string = "EmptySource"
)

// AllowEmptyAnnotation, set to "true" on a Kustomization, lets a revision
// that builds to no objects prune everything the Kustomization applied.
// Without it such a revision (a force-push of an empty branch, say) is
// refused and the applied objects stay.
const AllowEmptyAnnotation = "windlass.dev/allow-empty"
