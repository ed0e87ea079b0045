package v2

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
)

// HelmReleaseKind is the kind name of HelmRelease.
const HelmReleaseKind = "HelmRelease"

// Drift detection modes.
const (
	DriftDetectionDisabled = "disabled"
	DriftDetectionWarn     = "warn"
	DriftDetectionEnabled  = "enabled"
)

// DriftDetectionAnnotation on a rendered object set to "disabled" leaves it
// out of drift detection.
const DriftDetectionAnnotation = "helm.toolkit.fluxcd.io/driftDetection"

// Owner labels the helm controller sets on every object of a release.
const (
	NameLabel      = "helm.toolkit.fluxcd.io/name"
	NamespaceLabel = "helm.toolkit.fluxcd.io/namespace"
)

// HelmReleaseSpec is the desired state of a HelmRelease.
//
// +kubebuilder:validation:XValidation:rule="(has(self.chart) && !has(self.chartRef)) || (!has(self.chart) && has(self.chartRef))",message="either chart or chartRef must be set"
type HelmReleaseSpec struct {
	// Chart is the template of the HelmChart that the controller creates
	// for this release, in the namespace of its source.
	// +optional
	Chart *HelmChartTemplate `json:"chart,omitempty"`

	// ChartRef names an existing source of the chart: an OCIRepository or a
	// HelmChart.
	// +optional
	ChartRef *CrossNamespaceSourceReference `json:"chartRef,omitempty"`

	// Interval at which the release is reconciled.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// KubeConfig reaches a remote cluster to release to.
	// +optional
	KubeConfig *meta.KubeConfigReference `json:"kubeConfig,omitempty"`

	// Suspend stops reconciliation.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ReleaseName is the name of the Helm release; defaults to
	// '[targetNamespace-]name', shortened to 53 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// TargetNamespace is the namespace of the release; defaults to the
	// HelmRelease's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// StorageNamespace is where Helm keeps the release records; defaults to
	// the HelmRelease's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// DependsOn lists the HelmReleases (or, naming the kind,
	// Kustomizations) that must be ready before this release is installed
	// or upgraded.
	// +optional
	DependsOn []meta.DependencyReference `json:"dependsOn,omitempty"`

	// Timeout of each Helm action; defaults to 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// MaxHistory is the number of release records kept; defaults to 5, 0
	// keeps them all.
	// +optional
	MaxHistory *int `json:"maxHistory,omitempty"`

	// ServiceAccountName is impersonated for every Helm action.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// PersistentClient is accepted for compatibility; the controller always
	// shares its clients.
	// +optional
	PersistentClient *bool `json:"persistentClient,omitempty"`

	// DriftDetection compares the cluster with the release manifest and
	// reports (warn) or corrects (enabled) the differences.
	// +optional
	DriftDetection *DriftDetection `json:"driftDetection,omitempty"`

	// Install configures the install action.
	// +optional
	Install *Install `json:"install,omitempty"`

	// Upgrade configures the upgrade action.
	// +optional
	Upgrade *Upgrade `json:"upgrade,omitempty"`

	// Test configures the test action, run after an install or upgrade.
	// +optional
	Test *Test `json:"test,omitempty"`

	// Rollback configures the rollback action.
	// +optional
	Rollback *Rollback `json:"rollback,omitempty"`

	// Uninstall configures the uninstall action.
	// +optional
	Uninstall *Uninstall `json:"uninstall,omitempty"`

	// ValuesFrom lists ConfigMaps and Secrets whose values are merged in
	// order, before Values.
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// Values are the release's values, merged last.
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// PostRenderers change the rendered manifests before they are applied,
	// in order.
	// +optional
	PostRenderers []PostRenderer `json:"postRenderers,omitempty"`

	// WaitStrategy says how the controller waits for the release's objects:
	// poller (kstatus, the default) or legacy (Helm's own).
	// +optional
	WaitStrategy *WaitStrategy `json:"waitStrategy,omitempty"`

	// HealthCheckExprs judge the health of custom resources.
	// +optional
	HealthCheckExprs []kustomizev1.CustomHealthCheck `json:"healthCheckExprs,omitempty"`

	// CommonMetadata adds labels and annotations to every rendered object.
	// +optional
	CommonMetadata *kustomizev1.CommonMetadata `json:"commonMetadata,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for this object to reconcile: it installs, upgrades and corrects
	// nothing while one is closed. A missing gate counts as closed. The
	// namespace defaults to this object's.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// HelmChartTemplate is the template of the HelmChart of a release.
type HelmChartTemplate struct {
	// ObjectMeta holds labels and annotations for the HelmChart.
	// +optional
	ObjectMeta *HelmChartTemplateObjectMeta `json:"metadata,omitempty"`

	// Spec of the HelmChart.
	// +required
	Spec HelmChartTemplateSpec `json:"spec"`
}

// HelmChartTemplateObjectMeta holds the labels and annotations of a
// HelmChart made from a template.
type HelmChartTemplateObjectMeta struct {
	// Labels of the HelmChart.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations of the HelmChart.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// HelmChartTemplateSpec is the spec of a HelmChart made from a template.
type HelmChartTemplateSpec struct {
	// Chart is the name of the chart, or the path of its folder in a
	// GitRepository or Bucket.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	Chart string `json:"chart"`

	// Version is a semver range of chart versions; defaults to '*'.
	// +kubebuilder:default:=*
	// +optional
	Version string `json:"version,omitempty"`

	// SourceRef names the source of the chart.
	// +required
	SourceRef CrossNamespaceObjectReference `json:"sourceRef"`

	// Interval at which the HelmChart is checked; defaults to the
	// release's interval.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// ReconcileStrategy of the HelmChart: ChartVersion or Revision.
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	// +kubebuilder:default:=ChartVersion
	// +optional
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// ValuesFiles of the HelmChart, merged in order.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips values files that do not exist.
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`

	// Verify checks the chart's signature (OCI HelmRepository only).
	// +optional
	Verify *HelmChartTemplateVerification `json:"verify,omitempty"`
}

// HelmChartTemplateVerification says how to verify a chart's signature.
type HelmChartTemplateVerification struct {
	// Provider of the signatures: cosign (notation is reported as
	// unsupported).
	// +kubebuilder:validation:Enum=cosign;notation
	// +kubebuilder:default:=cosign
	// +optional
	Provider string `json:"provider,omitempty"`

	// SecretRef names a Secret of cosign public keys.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
}

// CrossNamespaceObjectReference names the source of a chart template.
type CrossNamespaceObjectReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source.
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the source; defaults to the HelmRelease's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// CrossNamespaceSourceReference names an existing chart source.
type CrossNamespaceSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source.
	// +kubebuilder:validation:Enum=OCIRepository;HelmChart;ExternalArtifact
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the source; defaults to the HelmRelease's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// DriftDetection configures drift detection.
type DriftDetection struct {
	// Mode: disabled (the default), warn (report) or enabled (report and
	// correct).
	// +kubebuilder:validation:Enum=enabled;warn;disabled
	// +optional
	Mode string `json:"mode,omitempty"`

	// Ignore excludes fields from drift detection.
	// +optional
	Ignore []kustomizev1.IgnoreRule `json:"ignore,omitempty"`
}

// ValuesReference names values in a ConfigMap or Secret.
type ValuesReference struct {
	// Kind of the object: ConfigMap or Secret.
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +required
	Kind string `json:"kind"`

	// Name of the object, in the HelmRelease's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// ValuesKey is the data key of the values; defaults to values.yaml.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[\-._a-zA-Z0-9]+$`
	// +optional
	ValuesKey string `json:"valuesKey,omitempty"`

	// TargetPath puts the value of ValuesKey at this path (Helm --set
	// syntax) instead of merging it as YAML.
	// +kubebuilder:validation:MaxLength=250
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9_\-.\\\/]|\[[0-9]{1,5}\])+$`
	// +optional
	TargetPath string `json:"targetPath,omitempty"`

	// Optional tolerates a missing object or key.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// GetValuesKey returns the data key of the values, values.yaml by default.
func (in ValuesReference) GetValuesKey() string {
	if in.ValuesKey == "" {
		return "values.yaml"
	}
	return in.ValuesKey
}

// PostRenderer changes the rendered manifests.
type PostRenderer struct {
	// Kustomize patches and images.
	// +optional
	Kustomize *Kustomize `json:"kustomize,omitempty"`
}

// Kustomize is a kustomize post-renderer.
type Kustomize struct {
	// Patches applied to the rendered objects.
	// +optional
	Patches []kustomizev1.Patch `json:"patches,omitempty"`

	// Images override container images.
	// +optional
	Images []kustomizev1.Image `json:"images,omitempty"`
}

// WaitStrategy says how to wait for a release's objects.
type WaitStrategy struct {
	// Name of the strategy: poller or legacy.
	// +kubebuilder:validation:Enum=poller;legacy
	// +required
	Name string `json:"name"`
}
