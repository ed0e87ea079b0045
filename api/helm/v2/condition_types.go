package v2

// Condition types of a HelmRelease besides Ready, Reconciling and Stalled.
const (
	// ReleasedCondition tells whether the last install or upgrade
	// succeeded.
	ReleasedCondition = "Released"
	// TestSuccessCondition tells whether the last tests passed.
	TestSuccessCondition = "TestSuccess"
	// RemediatedCondition is True when the release was rolled back or
	// uninstalled after a failure.
	RemediatedCondition = "Remediated"
	// DriftedCondition tells whether the cluster differs from the release.
	DriftedCondition = "Drifted"
)

// Condition reasons of a HelmRelease.
const (
	InstallSucceededReason   = "InstallSucceeded"
	InstallFailedReason      = "InstallFailed"
	UpgradeSucceededReason   = "UpgradeSucceeded"
	UpgradeFailedReason      = "UpgradeFailed"
	TestSucceededReason      = "TestSucceeded"
	TestFailedReason         = "TestFailed"
	RollbackSucceededReason  = "RollbackSucceeded"
	RollbackFailedReason     = "RollbackFailed"
	UninstallSucceededReason = "UninstallSucceeded"
	UninstallFailedReason    = "UninstallFailed"
	// DriftDetectedReason: the cluster differs from the release manifest.
	DriftDetectedReason = "DriftDetected"
	// NoDriftDetectedReason: the cluster equals the release manifest.
	NoDriftDetectedReason = "NoDriftDetected"
	// DriftCorrectedReason: drift was found and corrected.
	DriftCorrectedReason = "DriftCorrected"
	// ArtifactFailedReason: the chart could not be fetched or loaded.
	ArtifactFailedReason = "ArtifactFailed"
	// InitFailedReason: the release could not be prepared (values, client).
	InitFailedReason = "InitFailed"
	// GetLastReleaseFailedReason: the release storage could not be read.
	GetLastReleaseFailedReason = "GetLastReleaseFailed"
	// RetriesExceededReason: the remediation retries are exhausted.
	RetriesExceededReason = "RetriesExceeded"
	// InventoryBuildFailedReason: the inventory of the release could not be
	// built from its manifest.
	InventoryBuildFailedReason = "InventoryBuildFailed"
	// DependencyNotReadyReason: a dependency is not ready.
	DependencyNotReadyReason = "DependencyNotReady"
	// HealthCheckFailedReason: a custom health check failed.
	HealthCheckFailedReason = "HealthCheckFailed"
	// InvalidSpecReason: the spec is invalid in a way that the CRD schema
	// cannot express.
	InvalidSpecReason = "InvalidSpec"
)
