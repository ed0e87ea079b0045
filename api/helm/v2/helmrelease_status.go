package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// Release actions recorded in status.lastAttemptedReleaseAction.
const (
	ReleaseActionInstall = "install"
	ReleaseActionUpgrade = "upgrade"
)

// HelmReleaseStatus is the observed state of a HelmRelease.
type HelmReleaseStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ObservedPostRenderersDigest is the digest of the post-renderers of
	// the last release.
	// +optional
	ObservedPostRenderersDigest string `json:"observedPostRenderersDigest,omitempty"`

	// ObservedCommonMetadataDigest is the digest of the common metadata of
	// the last release.
	// +optional
	ObservedCommonMetadataDigest string `json:"observedCommonMetadataDigest,omitempty"`

	// LastAttemptedGeneration is the generation of the last install or
	// upgrade attempt.
	// +optional
	LastAttemptedGeneration int64 `json:"lastAttemptedGeneration,omitempty"`

	// Conditions of the HelmRelease.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// HelmChart is the namespace/name of the HelmChart made for the
	// release.
	// +optional
	HelmChart string `json:"helmChart,omitempty"`

	// StorageNamespace is the namespace of the release records.
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// History holds the releases, newest first.
	// +optional
	History Snapshots `json:"history,omitempty"`

	// LastAttemptedReleaseAction is the last install or upgrade attempted.
	// +kubebuilder:validation:Enum=install;upgrade
	// +optional
	LastAttemptedReleaseAction string `json:"lastAttemptedReleaseAction,omitempty"`

	// LastAttemptedReleaseActionDuration is how long it took.
	// +optional
	LastAttemptedReleaseActionDuration *metav1.Duration `json:"lastAttemptedReleaseActionDuration,omitempty"`

	// Failures counts the failed reconciliations since the last success.
	// +optional
	Failures int64 `json:"failures,omitempty"`

	// InstallFailures counts the failed installs since the last success.
	// +optional
	InstallFailures int64 `json:"installFailures,omitempty"`

	// UpgradeFailures counts the failed upgrades since the last success.
	// +optional
	UpgradeFailures int64 `json:"upgradeFailures,omitempty"`

	// LastAttemptedRevision is the chart version last attempted.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// LastAttemptedRevisionDigest is the digest of the chart artifact last
	// attempted.
	// +optional
	LastAttemptedRevisionDigest string `json:"lastAttemptedRevisionDigest,omitempty"`

	// LastAttemptedValuesChecksum is deprecated: see
	// LastAttemptedConfigDigest.
	// +optional
	LastAttemptedValuesChecksum string `json:"lastAttemptedValuesChecksum,omitempty"`

	// LastReleaseRevision is deprecated: see History.
	// +optional
	LastReleaseRevision int `json:"lastReleaseRevision,omitempty"`

	// LastAttemptedConfigDigest is the digest of the values last attempted.
	// +optional
	LastAttemptedConfigDigest string `json:"lastAttemptedConfigDigest,omitempty"`

	// LastHandledForceAt is the last forceAt token acted on.
	// +optional
	LastHandledForceAt string `json:"lastHandledForceAt,omitempty"`

	// LastHandledResetAt is the last resetAt token acted on.
	// +optional
	LastHandledResetAt string `json:"lastHandledResetAt,omitempty"`

	// Inventory lists the objects of the release.
	// +optional
	Inventory *kustomizev1.ResourceInventory `json:"inventory,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Snapshots are release snapshots, newest first.
type Snapshots []*Snapshot

// Latest returns the newest snapshot, or nil.
func (in Snapshots) Latest() *Snapshot {
	if len(in) == 0 {
		return nil
	}
	return in[0]
}

// Previous returns the newest snapshot before the latest that was
// deployed or superseded, the one a rollback returns to, or nil.
func (in Snapshots) Previous(ignoreTests bool) *Snapshot {
	for _, s := range in[min(1, len(in)):] {
		if s.Status == "deployed" || s.Status == "superseded" {
			if ignoreTests || !s.HasTestInPhase("Failed") {
				return s
			}
		}
	}
	return nil
}

// Snapshot records one Helm release.
type Snapshot struct {
	// APIVersion of the snapshot format.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Digest of the release object.
	// +required
	Digest string `json:"digest"`

	// Name of the release.
	// +required
	Name string `json:"name"`

	// Namespace of the release.
	// +required
	Namespace string `json:"namespace"`

	// Version of the release.
	// +required
	Version int `json:"version"`

	// Status of the release (deployed, failed, superseded, ...).
	// +required
	Status string `json:"status"`

	// Action that made the release (install, upgrade, rollback).
	// +optional
	Action string `json:"action,omitempty"`

	// ChartName of the release.
	// +required
	ChartName string `json:"chartName"`

	// ChartVersion of the release.
	// +required
	ChartVersion string `json:"chartVersion"`

	// AppVersion of the chart.
	// +optional
	AppVersion string `json:"appVersion,omitempty"`

	// ConfigDigest is the digest of the release's values.
	// +required
	ConfigDigest string `json:"configDigest"`

	// FirstDeployed is when the release was first deployed.
	// +required
	FirstDeployed metav1.Time `json:"firstDeployed"`

	// LastDeployed is when the release was last deployed.
	// +required
	LastDeployed metav1.Time `json:"lastDeployed"`

	// Deleted is when the release was deleted.
	// +optional
	Deleted metav1.Time `json:"deleted,omitempty"`

	// TestHooks are the test hooks of the release and their last run.
	// +optional
	TestHooks *map[string]*TestHookStatus `json:"testHooks,omitempty"`

	// OCIDigest is the digest of the OCI chart artifact.
	// +optional
	OCIDigest string `json:"ociDigest,omitempty"`
}

// HasTestInPhase reports whether a test hook of the release is in phase.
func (in *Snapshot) HasTestInPhase(phase string) bool {
	if in == nil || in.TestHooks == nil {
		return false
	}
	for _, h := range *in.TestHooks {
		if h != nil && h.Phase == phase {
			return true
		}
	}
	return false
}

// TestHookStatus is the last run of a test hook.
type TestHookStatus struct {
	// LastStarted is when the test last started.
	// +optional
	LastStarted metav1.Time `json:"lastStarted,omitempty"`

	// LastCompleted is when the test last completed.
	// +optional
	LastCompleted metav1.Time `json:"lastCompleted,omitempty"`

	// Phase of the test: Succeeded or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`
}
