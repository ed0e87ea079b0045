package v2

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CRD policies of install and upgrade.
const (
	// CRDsSkip leaves the chart's crds/ folder alone.
	CRDsSkip = "Skip"
	// CRDsCreate creates the CRDs that do not exist.
	CRDsCreate = "Create"
	// CRDsCreateReplace creates and replaces the CRDs.
	CRDsCreateReplace = "CreateReplace"
)

// Remediation strategies of a failed upgrade.
const (
	RemediationRollback  = "rollback"
	RemediationUninstall = "uninstall"
)

// Action strategies.
const (
	// ActionStrategyRemediateOnFailure remediates a failed action as
	// configured (the default).
	ActionStrategyRemediateOnFailure = "RemediateOnFailure"
	// ActionStrategyRetryOnFailure retries a failed action after
	// retryInterval without remediation.
	ActionStrategyRetryOnFailure = "RetryOnFailure"
)

// Install configures the install action.
type Install struct {
	// Timeout of the install; defaults to spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Remediation of a failed install.
	// +optional
	Remediation *InstallRemediation `json:"remediation,omitempty"`

	// Strategy of the install on failure.
	// +optional
	Strategy *ActionStrategy `json:"strategy,omitempty"`

	// DisableTakeOwnership refuses to adopt objects that exist and belong
	// to no release.
	// +optional
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`

	// DisableWait does not wait for the objects to be ready.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableWaitForJobs does not wait for Jobs to complete.
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// DisableOpenAPIValidation skips validation against the cluster's
	// OpenAPI schema.
	// +optional
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`

	// DisableSchemaValidation skips the chart's values.schema.json.
	// +optional
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`

	// Replace reuses the name of a deleted release still in history.
	// +optional
	Replace bool `json:"replace,omitempty"`

	// SkipCRDs is deprecated: use CRDs: Skip.
	// +optional
	SkipCRDs bool `json:"skipCRDs,omitempty"`

	// CRDs policy: Skip, Create (the default) or CreateReplace.
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	// +optional
	CRDs string `json:"crds,omitempty"`

	// CreateNamespace creates the target namespace when missing.
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`

	// ServerSideApply applies with server-side apply (the default).
	// +optional
	ServerSideApply *bool `json:"serverSideApply,omitempty"`
}

// InstallRemediation configures the remediation of a failed install.
type InstallRemediation struct {
	// Retries is the number of retries after a failure; -1 retries
	// forever, 0 (the default) never.
	// +optional
	Retries int `json:"retries,omitempty"`

	// IgnoreTestFailures does not count failed tests as a failure.
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`

	// RemediateLastFailure remediates the last failure too, when the
	// retries are exhausted; defaults to true when Retries > 0.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`
}

// DefaultRetryInterval is the interval between the retries of a failed
// action under RetryOnFailure when retryInterval is not set.
const DefaultRetryInterval = 5 * time.Minute

// ActionStrategy is the strategy of an action on failure.
type ActionStrategy struct {
	// Name: RemediateOnFailure (the default) or RetryOnFailure.
	// +kubebuilder:validation:Enum=RemediateOnFailure;RetryOnFailure
	// +required
	Name string `json:"name"`

	// RetryInterval between retries under RetryOnFailure; defaults to
	// DefaultRetryInterval.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
}

// Upgrade configures the upgrade action.
type Upgrade struct {
	// Timeout of the upgrade; defaults to spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Remediation of a failed upgrade.
	// +optional
	Remediation *UpgradeRemediation `json:"remediation,omitempty"`

	// Strategy of the upgrade on failure.
	// +optional
	Strategy *ActionStrategy `json:"strategy,omitempty"`

	// DisableTakeOwnership refuses to adopt objects that exist and belong
	// to no release.
	// +optional
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`

	// DisableWait does not wait for the objects to be ready.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableWaitForJobs does not wait for Jobs to complete.
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// DisableOpenAPIValidation skips validation against the cluster's
	// OpenAPI schema.
	// +optional
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`

	// DisableSchemaValidation skips the chart's values.schema.json.
	// +optional
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`

	// Force replaces objects whose update fails.
	// +optional
	Force bool `json:"force,omitempty"`

	// PreserveValues reuses the values of the last release, merged under
	// the new ones.
	// +optional
	PreserveValues bool `json:"preserveValues,omitempty"`

	// CleanupOnFail deletes the objects the failed upgrade created.
	// +optional
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`

	// CRDs policy: Skip (the default), Create or CreateReplace.
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	// +optional
	CRDs string `json:"crds,omitempty"`

	// ServerSideApply: enabled, disabled or auto (as the last release).
	// +kubebuilder:validation:Enum=enabled;disabled;auto
	// +optional
	ServerSideApply string `json:"serverSideApply,omitempty"`

	// ChartNameChangeStrategy: Reinstall (the default) uninstalls and
	// installs when the chart's name changes; InPlaceUpdate upgrades.
	// +kubebuilder:validation:Enum=Reinstall;InPlaceUpdate
	// +optional
	ChartNameChangeStrategy string `json:"chartNameChangeStrategy,omitempty"`
}

// UpgradeRemediation configures the remediation of a failed upgrade.
type UpgradeRemediation struct {
	// Retries is the number of retries after a failure; -1 retries
	// forever, 0 (the default) never.
	// +optional
	Retries int `json:"retries,omitempty"`

	// IgnoreTestFailures does not count failed tests as a failure.
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`

	// RemediateLastFailure remediates the last failure too, when the
	// retries are exhausted; defaults to true when Retries > 0.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`

	// Strategy of the remediation: rollback (the default) or uninstall.
	// +kubebuilder:validation:Enum=rollback;uninstall
	// +optional
	Strategy string `json:"strategy,omitempty"`
}

// Test configures the test action.
type Test struct {
	// Enable runs the chart's test hooks after an install or upgrade.
	// +optional
	Enable bool `json:"enable,omitempty"`

	// Timeout of the tests; defaults to spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// IgnoreFailures reports failed tests without failing the release.
	// +optional
	IgnoreFailures bool `json:"ignoreFailures,omitempty"`

	// Filters select the tests to run.
	// +optional
	Filters []Filter `json:"filters,omitempty"`
}

// Filter selects a test by name.
type Filter struct {
	// Name of the test.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Exclude leaves the test out instead of selecting it.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// Rollback configures the rollback action.
type Rollback struct {
	// Timeout of the rollback; defaults to spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// DisableWait does not wait for the objects to be ready.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableWaitForJobs does not wait for Jobs to complete.
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// Recreate is deprecated and ignored.
	// +optional
	Recreate bool `json:"recreate,omitempty"`

	// Force replaces objects whose update fails.
	// +optional
	Force bool `json:"force,omitempty"`

	// CleanupOnFail deletes the objects the failed rollback created.
	// +optional
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`

	// ServerSideApply: enabled, disabled or auto (as the release rolled
	// back to).
	// +kubebuilder:validation:Enum=enabled;disabled;auto
	// +optional
	ServerSideApply string `json:"serverSideApply,omitempty"`
}

// Uninstall configures the uninstall action.
type Uninstall struct {
	// Timeout of the uninstall; defaults to spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// KeepHistory keeps the release records.
	// +optional
	KeepHistory bool `json:"keepHistory,omitempty"`

	// DisableWait does not wait for the objects to be deleted.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DeletionPropagation: background (the default), foreground or orphan.
	// +kubebuilder:validation:Enum=background;foreground;orphan
	// +optional
	DeletionPropagation *string `json:"deletionPropagation,omitempty"`
}
