package meta

// Condition types shared by every kind. Ready, Reconciling and Stalled follow
// kstatus: Reconciling and Stalled are abnormal-true and are removed when they
// no longer hold.
const (
	// ReadyCondition tells whether the object's last reconciliation succeeded.
	ReadyCondition string = "Ready"

	// ReconcilingCondition is True while the controller works towards the
	// desired state.
	ReconcilingCondition string = "Reconciling"

	// StalledCondition is True when the controller cannot make progress without
	// a change to the object (an invalid spec, for instance).
	StalledCondition string = "Stalled"

	// HealthyCondition tells whether the objects an applier manages are healthy.
	HealthyCondition string = "Healthy"

	// ApprovedCondition tells whether the gates of an applier (spec.gates)
	// let it reconcile: False while one is closed.
	ApprovedCondition string = "Approved"

	// BlockedCondition is True while a gate of a source (spec.gates) is
	// closed: the source fetches nothing new and keeps its last artifact.
	BlockedCondition string = "Blocked"
)

// Condition reasons shared by every kind.
const (
	// GateClosedReason: a gate the object names in spec.gates is closed (or
	// missing).
	GateClosedReason string = "GateClosed"

	// GatesOpenedReason: every gate the object names is open.
	GatesOpenedReason string = "GatesOpened"

	// SucceededReason: the reconciliation succeeded.
	SucceededReason string = "Succeeded"

	// FailedReason: the reconciliation failed.
	FailedReason string = "Failed"

	// ProgressingReason: the reconciliation is under way.
	ProgressingReason string = "Progressing"

	// ProgressingWithRetryReason: the reconciliation is under way after a
	// failure.
	ProgressingWithRetryReason string = "ProgressingWithRetry"

	// SuspendedReason: the object is suspended.
	SuspendedReason string = "Suspended"

	// DependencyNotReadyReason: a dependency is not ready yet.
	DependencyNotReadyReason string = "DependencyNotReady"

	// ReconciliationSucceededReason: the reconciliation succeeded.
	ReconciliationSucceededReason string = "ReconciliationSucceeded"

	// ReconciliationFailedReason: the reconciliation failed.
	ReconciliationFailedReason string = "ReconciliationFailed"

	// InvalidURLReason: a URL in the spec is invalid.
	InvalidURLReason string = "InvalidURL"

	// InvalidPathReason: a path in the spec is invalid.
	InvalidPathReason string = "InvalidPath"

	// ArtifactFailedReason: an artifact could not be fetched.
	ArtifactFailedReason string = "ArtifactFailed"

	// BuildFailedReason: a build failed.
	BuildFailedReason string = "BuildFailed"

	// PruneFailedReason: pruning failed.
	PruneFailedReason string = "PruneFailed"

	// HealthCheckFailedReason: a health check failed.
	HealthCheckFailedReason string = "HealthCheckFailed"

	// AccessDeniedReason: a reference to another namespace is refused
	// (--no-cross-namespace-refs).
	AccessDeniedReason string = "AccessDenied"

	// InsecureConnectionsDisallowedReason: the spec names a plain-HTTP
	// endpoint while the controller refuses them (--insecure-allow-http=false).
	InsecureConnectionsDisallowedReason string = "InsecureConnectionsDisallowed"

	// InvalidCELExpressionReason: a CEL expression does not compile.
	InvalidCELExpressionReason string = "InvalidCELExpression"

	// UnsupportedProviderReason: spec.provider names a cloud provider
	// (aws, azure, gcp) whose workload identity Windlass does not serve.
	UnsupportedProviderReason string = "UnsupportedProvider"

	// UnsupportedVerificationProviderReason: spec.verify.provider names a
	// verifier Windlass does not serve (notation).
	UnsupportedVerificationProviderReason string = "UnsupportedVerificationProvider"

	// UnsupportedVerificationReason: spec.verify asks to verify what
	// Windlass cannot verify (a Helm chart that does not come from an OCI
	// registry, which holds no signature).
	UnsupportedVerificationReason string = "UnsupportedVerification"

	// UnsupportedSourceKindReason: a sourceRef or chartRef names a kind
	// Windlass does not serve (ExternalArtifact).
	UnsupportedSourceKindReason string = "UnsupportedSourceKind"

	// UnsupportedKubeConfigReason: spec.kubeConfig names a remote cluster in
	// a way Windlass does not serve (configMapRef, workload identity).
	UnsupportedKubeConfigReason string = "UnsupportedKubeConfig"
)
