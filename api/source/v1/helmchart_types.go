package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
)

// HelmChartKind is the kind name of HelmChart.
const HelmChartKind = "HelmChart"

// Reconcile strategies of a HelmChart: what makes it build a new artifact.
const (
	// ReconcileStrategyChartVersion rebuilds when the chart's version
	// changes (the default).
	ReconcileStrategyChartVersion = "ChartVersion"
	// ReconcileStrategyRevision rebuilds when the source's revision changes;
	// the artifact's version gets the revision as build metadata.
	ReconcileStrategyRevision = "Revision"
)

// HelmChartSpec is the desired state of a HelmChart.
type HelmChartSpec struct {
	// Chart is the name of the chart in a HelmRepository, or the path of
	// its folder in a GitRepository's or Bucket's artifact.
	// +required
	Chart string `json:"chart"`

	// Version is a semver range of chart versions (HelmRepository only);
	// defaults to '*', the newest.
	// +kubebuilder:default:=*
	// +optional
	Version string `json:"version,omitempty"`

	// SourceRef names the source of the chart, in the HelmChart's
	// namespace.
	// +required
	SourceRef LocalHelmChartSourceReference `json:"sourceRef"`

	// Interval at which the chart is checked for updates.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// ReconcileStrategy says what makes a new artifact: ChartVersion (a new
	// chart version, the default) or Revision (a new source revision).
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	// +kubebuilder:default:=ChartVersion
	// +optional
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// ValuesFiles are values files in the chart (or its source), merged in
	// order into the packaged chart's values.yaml.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips the values files that do not exist
	// instead of failing.
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`

	// Suspend tells the controller to stop reconciling this object.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Verify checks the signature of a chart from an OCI HelmRepository
	// before it is stored.
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this object to reconcile: it builds no new chart while one is
	// closed (it keeps serving its last artifact). A missing gate counts as
	// closed. The namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// LocalHelmChartSourceReference names the source of a chart.
type LocalHelmChartSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source: HelmRepository, GitRepository or Bucket.
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +required
	Name string `json:"name"`
}

// HelmChartStatus is the observed state of a HelmChart.
type HelmChartStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ObservedSourceArtifactRevision is the revision of the source artifact
	// the last chart was built from.
	// +optional
	ObservedSourceArtifactRevision string `json:"observedSourceArtifactRevision,omitempty"`

	// ObservedChartName is the name of the last chart built.
	// +optional
	ObservedChartName string `json:"observedChartName,omitempty"`

	// ObservedValuesFiles are the values files merged into the last chart.
	// +optional
	ObservedValuesFiles []string `json:"observedValuesFiles,omitempty"`

	// Conditions of the HelmChart.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the download address of the last chart artifact.
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the packaged chart of the last successful build.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmChart is the Schema for the helmcharts API: a chart fetched from a
// Helm repository, or packaged from a folder of a Git repository or bucket.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hc,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Source Kind",type=string,JSONPath=`.spec.sourceRef.kind`
// +kubebuilder:printcolumn:name="Source Name",type=string,JSONPath=`.spec.sourceRef.name`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
type HelmChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HelmChartSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status HelmChartStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HelmChartList is a list of HelmCharts.
type HelmChartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmChart `json:"items"`
}

func init() {
	SchemeBuilder.Register(&HelmChart{}, &HelmChartList{})
}

// GetConditions returns the object's conditions.
func (in *HelmChart) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *HelmChart) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetArtifact returns the object's latest artifact, or nil.
func (in *HelmChart) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetRequeueAfter returns the interval at which to reconcile the object.
func (in *HelmChart) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// GetVersion returns the semver range of the chart, '*' by default.
func (in *HelmChart) GetVersion() string {
	if in.Spec.Version == "" {
		return "*"
	}
	return in.Spec.Version
}

// GetReconcileStrategy returns the reconcile strategy, ChartVersion by
// default.
func (in *HelmChart) GetReconcileStrategy() string {
	if in.Spec.ReconcileStrategy == "" {
		return ReconcileStrategyChartVersion
	}
	return in.Spec.ReconcileStrategy
}

// IsSuspended reports whether reconciliation is suspended (spec.suspend).
func (in *HelmChart) IsSuspended() bool { return in.Spec.Suspend }

// GetGates returns the gates the object waits behind (spec.gates).
func (in *HelmChart) GetGates() []meta.NamespacedObjectReference { return in.Spec.Gates }

// SetObservedGeneration records the generation the controller acted on.
func (in *HelmChart) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetObservedGeneration returns the generation the controller last acted on.
func (in *HelmChart) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetLastHandledReconcileRequest records the reconcile request token the
// controller acted on.
func (in *HelmChart) SetLastHandledReconcileRequest(token string) {
	in.Status.LastHandledReconcileAt = token
}
