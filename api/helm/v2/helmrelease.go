package v2

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// HelmRelease is the Schema for the helmreleases API: a Helm release that
// the controller keeps equal to its declaration.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hr,categories=all;fluxcd;fluxcd-appliers
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type HelmRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HelmReleaseSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status HelmReleaseStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HelmReleaseList is a list of HelmReleases.
type HelmReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRelease `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HelmRelease{}, &HelmReleaseList{})
}

// DefaultTimeout is the timeout of a Helm action when the spec leaves it
// out.
const DefaultTimeout = 5 * time.Minute

// DefaultMaxHistory is the number of release records kept when the spec
// leaves it out.
const DefaultMaxHistory = 5

// GetConditions returns the object's conditions.
func (in *HelmRelease) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *HelmRelease) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *HelmRelease) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *HelmRelease) IsSuspended() bool { return in.Spec.Suspend }

// GetGates returns the gates the object waits behind (spec.gates).
func (in *HelmRelease) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// SetObservedGeneration records the generation the controller acted on.
func (in *HelmRelease) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *HelmRelease) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *HelmRelease) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}

// GetTimeout returns the timeout of a Helm action: spec.timeout, else 5m.
func (in *HelmRelease) GetTimeout() time.Duration {
	if in.Spec.Timeout != nil && in.Spec.Timeout.Duration > 0 {
		return in.Spec.Timeout.Duration
	}
	return DefaultTimeout
}

// ActionTimeout returns an action's own timeout, else the release's.
func (in *HelmRelease) ActionTimeout(own *metav1.Duration) time.Duration {
	if own != nil && own.Duration > 0 {
		return own.Duration
	}
	return in.GetTimeout()
}

// GetMaxHistory returns the number of release records kept (0: all).
func (in *HelmRelease) GetMaxHistory() int {
	if in.Spec.MaxHistory == nil {
		return DefaultMaxHistory
	}
	return *in.Spec.MaxHistory
}

// GetReleaseNamespace returns the namespace of the release: the target
// namespace, else the HelmRelease's.
func (in *HelmRelease) GetReleaseNamespace() string {
	if in.Spec.TargetNamespace != "" {
		return in.Spec.TargetNamespace
	}
	return in.Namespace
}

// GetStorageNamespace returns the namespace of the release records.
func (in *HelmRelease) GetStorageNamespace() string {
	if in.Spec.StorageNamespace != "" {
		return in.Spec.StorageNamespace
	}
	return in.Namespace
}

// GetReleaseName returns the name of the Helm release: spec.releaseName,
// else '[targetNamespace-]name'; a name over 53 characters is cut to 40
// and suffixed with '-' and the first 12 hex digits of its sha256, as the
// reference does.
func (in *HelmRelease) GetReleaseName() string {
	if in.Spec.ReleaseName != "" {
		return in.Spec.ReleaseName
	}
	name := in.Name
	if in.Spec.TargetNamespace != "" {
		name = in.Spec.TargetNamespace + "-" + in.Name
	}
	return ShortenName(name)
}

// ShortenName shortens a release name over 53 characters to its first 40
// characters, '-', and the first 12 hex digits of the full name's sha256.
func ShortenName(name string) string {
	if len(name) <= 53 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimSuffix(name[:40], "-") + "-" + hex.EncodeToString(sum[:])[:12]
}

// GetHelmChartName returns the name of the HelmChart made for a chart
// template: '<namespace>-<name>'.
func (in *HelmRelease) GetHelmChartName() string {
	return in.Namespace + "-" + in.Name
}

// GetDriftDetectionMode returns the drift detection mode, disabled by
// default.
func (in *HelmRelease) GetDriftDetectionMode() string {
	if in.Spec.DriftDetection == nil || in.Spec.DriftDetection.Mode == "" {
		return DriftDetectionDisabled
	}
	return in.Spec.DriftDetection.Mode
}

// GetInstall returns the install configuration (never nil).
func (in *HelmRelease) GetInstall() Install {
	if in.Spec.Install == nil {
		return Install{}
	}
	return *in.Spec.Install
}

// GetUpgrade returns the upgrade configuration (never nil).
func (in *HelmRelease) GetUpgrade() Upgrade {
	if in.Spec.Upgrade == nil {
		return Upgrade{}
	}
	return *in.Spec.Upgrade
}

// GetTest returns the test configuration (never nil).
func (in *HelmRelease) GetTest() Test {
	if in.Spec.Test == nil {
		return Test{}
	}
	return *in.Spec.Test
}

// GetRollback returns the rollback configuration (never nil).
func (in *HelmRelease) GetRollback() Rollback {
	if in.Spec.Rollback == nil {
		return Rollback{}
	}
	return *in.Spec.Rollback
}

// GetUninstall returns the uninstall configuration (never nil).
func (in *HelmRelease) GetUninstall() Uninstall {
	if in.Spec.Uninstall == nil {
		return Uninstall{}
	}
	return *in.Spec.Uninstall
}

// GetCRDsPolicy returns the CRD policy of an install: spec.install.crds,
// Skip when skipCRDs is set, else Create.
func (in Install) GetCRDsPolicy() string {
	switch {
	case in.CRDs != "":
		return in.CRDs
	case in.SkipCRDs:
		return CRDsSkip
	default:
		return CRDsCreate
	}
}

// GetCRDsPolicy returns the CRD policy of an upgrade, Skip by default.
func (in Upgrade) GetCRDsPolicy() string {
	if in.CRDs == "" {
		return CRDsSkip
	}
	return in.CRDs
}

// GetRetries returns the retries of an install remediation.
func (in *InstallRemediation) GetRetries() int {
	if in == nil {
		return 0
	}
	return in.Retries
}

// MustRemediateLastFailure reports whether the last failure is remediated
// when the retries are exhausted: as set, else when Retries > 0.
func (in *InstallRemediation) MustRemediateLastFailure() bool {
	if in == nil {
		return false
	}
	if in.RemediateLastFailure != nil {
		return *in.RemediateLastFailure
	}
	return in.Retries > 0
}

// GetRetries returns the retries of an upgrade remediation.
func (in *UpgradeRemediation) GetRetries() int {
	if in == nil {
		return 0
	}
	return in.Retries
}

// MustRemediateLastFailure reports whether the last failure is remediated
// when the retries are exhausted: as set, else when Retries > 0.
func (in *UpgradeRemediation) MustRemediateLastFailure() bool {
	if in == nil {
		return false
	}
	if in.RemediateLastFailure != nil {
		return *in.RemediateLastFailure
	}
	return in.Retries > 0
}

// GetStrategy returns the remediation strategy, rollback by default.
func (in *UpgradeRemediation) GetStrategy() string {
	if in == nil || in.Strategy == "" {
		return RemediationRollback
	}
	return in.Strategy
}
