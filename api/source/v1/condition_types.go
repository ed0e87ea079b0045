package v1

// Condition types that the source kinds set besides Ready, Reconciling and
// Stalled. All of them but ArtifactInStorage and SourceVerified are
// abnormal-true: they are present only while the problem lasts.
const (
	// ArtifactInStorageCondition tells whether the artifact named in status is
	// in storage, with a digest that matches.
	ArtifactInStorageCondition string = "ArtifactInStorage"

	// ArtifactOutdatedCondition is True when the artifact in storage does not
	// reflect the current spec or upstream revision.
	ArtifactOutdatedCondition string = "ArtifactOutdated"

	// FetchFailedCondition is True when the upstream source could not be
	// fetched.
	FetchFailedCondition string = "FetchFailed"

	// SourceVerifiedCondition tells whether the upstream source passed its
	// authenticity check.
	SourceVerifiedCondition string = "SourceVerified"

	// IncludeUnavailableCondition is True when an included source has no
	// artifact to include.
	IncludeUnavailableCondition string = "IncludeUnavailable"

	// StorageOperationFailedCondition is True when a storage operation failed.
	StorageOperationFailedCondition string = "StorageOperationFailed"

	// BuildFailedCondition is True when the artifact could not be built.
	BuildFailedCondition string = "BuildFailed"
)

// Condition reasons of the source kinds.
const (
	// GitOperationSucceededReason: a git operation succeeded.
	GitOperationSucceededReason string = "GitOperationSucceeded"

	// GitOperationFailedReason: a git operation failed.
	GitOperationFailedReason string = "GitOperationFailed"

	// AuthenticationFailedReason: credentials are missing, invalid or refused.
	AuthenticationFailedReason string = "AuthenticationFailed"

	// VerificationErrorReason: the source failed its authenticity check.
	VerificationErrorReason string = "VerificationError"

	// ArtifactUpToDateReason: the artifact is up to date with the upstream
	// revision.
	ArtifactUpToDateReason string = "ArtifactUpToDate"

	// NewRevisionReason: a new upstream revision is available.
	NewRevisionReason string = "NewRevision"

	// StorageOperationFailedReason: a storage operation failed.
	StorageOperationFailedReason string = "StorageOperationFailed"

	// URLInvalidReason: the source URL is invalid.
	URLInvalidReason string = "URLInvalid"

	// InvalidSemverReason: the semver range does not parse.
	InvalidSemverReason string = "InvalidSemver"

	// IncludeUnavailableReason: an included source has no artifact.
	IncludeUnavailableReason string = "IncludeUnavailable"

	// DirCreationFailedReason: a working directory could not be created.
	DirCreationFailedReason string = "DirectoryCreationFailed"

	// ArchiveOperationFailedReason: the artifact archive could not be written.
	ArchiveOperationFailedReason string = "ArchiveOperationFailed"

	// SymlinkUpdateFailedReason: the latest-artifact link could not be
	// updated.
	SymlinkUpdateFailedReason string = "SymlinkUpdateFailed"

	// InvalidSpecReason: the spec is invalid in a way that the CRD schema
	// cannot express.
	InvalidSpecReason string = "InvalidSpec"
)

// Condition reasons of OCIRepository and Bucket.
const (
	// OCIPullFailedReason: the artifact could not be pulled from the
	// registry.
	OCIPullFailedReason string = "OCIArtifactPullFailed"

	// OCILayerOperationFailedReason: the selected layer could not be
	// extracted or copied.
	OCILayerOperationFailedReason string = "OCIArtifactLayerOperationFailed"

	// BucketOperationSucceededReason: the bucket was listed and its objects
	// downloaded.
	BucketOperationSucceededReason string = "BucketOperationSucceeded"

	// BucketOperationFailedReason: the bucket could not be listed or an
	// object downloaded.
	BucketOperationFailedReason string = "BucketOperationFailed"

	// InvalidProviderConfigurationReason: the provider needs something this
	// controller does not have, such as a cloud identity.
	InvalidProviderConfigurationReason string = "InvalidProviderConfiguration"
)

// Condition reasons of HelmRepository and HelmChart.
const (
	// IndexationFailedReason: the repository index could not be fetched or
	// parsed.
	IndexationFailedReason string = "IndexationFailed"

	// IndexationSucceededReason: the repository index was fetched and
	// stored.
	IndexationSucceededReason string = "IndexationSucceed"

	// ChartPullFailedReason: the chart could not be found or downloaded.
	ChartPullFailedReason string = "ChartPullFailed"

	// ChartPullSucceededReason: the chart was downloaded.
	ChartPullSucceededReason string = "ChartPullSucceeded"

	// ChartPackageFailedReason: the chart could not be loaded or packaged.
	ChartPackageFailedReason string = "ChartPackageFailed"

	// ChartPackageSucceededReason: the chart was packaged from a source.
	ChartPackageSucceededReason string = "ChartPackageSucceeded"
)
