package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// ImageUpdateAutomationKind is the kind name of ImageUpdateAutomation.
const ImageUpdateAutomationKind = "ImageUpdateAutomation"

// UpdateStrategySetters is the only update strategy: rewrite the values
// marked with setter comments.
const UpdateStrategySetters = "Setters"

// Signing key types.
const (
	SigningKeyGPG = "gpg"
	SigningKeySSH = "ssh"
)

// ImageUpdateAutomationSpec is the desired state of an
// ImageUpdateAutomation.
type ImageUpdateAutomationSpec struct {
	// SourceRef names the GitRepository to update: its URL and credentials
	// are used to clone and push.
	// +required
	SourceRef CrossNamespaceSourceReference `json:"sourceRef"`

	// GitSpec says what to check out, how to commit and where to push.
	// +optional
	GitSpec *GitSpec `json:"git,omitempty"`

	// Interval at which the automation runs.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('2562047h47m16.854775807s')",message="must be a duration that Go can parse: at most 2562047h47m16.854775807s"
	// +required
	Interval metav1.Duration `json:"interval"`

	// PolicySelector selects the ImagePolicies of the automation's
	// namespace that it applies; empty selects them all.
	// +optional
	PolicySelector *metav1.LabelSelector `json:"policySelector,omitempty"`

	// Update says which files are rewritten and how.
	// +kubebuilder:default={"strategy":"Setters"}
	// +optional
	Update *UpdateStrategy `json:"update,omitempty"`

	// Suspend tells the controller to stop running the automation.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Gates are the gates (gating.toolkit.fluxcd.io) that must all be open
	// for the automation to push: while one is closed it commits nothing. A
	// missing gate counts as closed. The namespace defaults to the
	// automation's. A Windlass extension.
	// +optional
	Gates []meta.NamespacedObjectReference `json:"gates,omitempty"`
}

// CrossNamespaceSourceReference names the automation's Git source.
type CrossNamespaceSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source: GitRepository.
	// +kubebuilder:validation:Enum=GitRepository
	// +kubebuilder:default=GitRepository
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +required
	Name string `json:"name"`

	// Namespace of the source; defaults to the automation's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GitSpec says how the automation works with its Git repository.
type GitSpec struct {
	// Checkout is the reference to check out; defaults to the
	// GitRepository's.
	// +optional
	Checkout *GitCheckoutSpec `json:"checkout,omitempty"`

	// Commit says how commits are written.
	// +required
	Commit CommitSpec `json:"commit"`

	// Push says where commits are pushed; defaults to the branch checked
	// out.
	// +optional
	Push *PushSpec `json:"push,omitempty"`
}

// GitCheckoutSpec is the reference an automation checks out.
type GitCheckoutSpec struct {
	// Reference to check out.
	// +required
	Reference sourcev1.GitRepositoryRef `json:"ref"`
}

// CommitSpec says how the automation writes commits.
type CommitSpec struct {
	// Author of the commits.
	// +required
	Author CommitUser `json:"author"`

	// SigningKey signs the commits.
	// +optional
	SigningKey *SigningKey `json:"signingKey,omitempty"`

	// MessageTemplate is a Go text/template of the commit message, over
	// .AutomationObject, .Changed (.FileChanges, .Objects, .Changes) and
	// .Values.
	// +optional
	MessageTemplate string `json:"messageTemplate,omitempty"`

	// MessageTemplateValues are the template's .Values.
	// +optional
	MessageTemplateValues map[string]string `json:"messageTemplateValues,omitempty"`
}

// CommitUser is the author of a commit.
type CommitUser struct {
	// Name of the author; defaults to the controller's name.
	// +optional
	Name string `json:"name,omitempty"`

	// Email of the author.
	// +kubebuilder:validation:MinLength=1
	// +required
	Email string `json:"email"`
}

// SigningKey names the key that signs the commits.
type SigningKey struct {
	// SecretRef names a Secret with the key: git.asc (an armored OpenPGP
	// private key) with an optional passphrase, or identity (an SSH
	// private key) with an optional password.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// Type of the key: gpg or ssh; by default, whichever the Secret holds.
	// A Windlass extension.
	// +kubebuilder:validation:Enum=gpg;ssh
	// +optional
	Type string `json:"type,omitempty"`
}

// PushSpec says where the automation pushes.
// +kubebuilder:validation:XValidation:rule="!(has(self.branch) && has(self.branchTemplate))",message="branch and branchTemplate are mutually exclusive"
type PushSpec struct {
	// Branch to push to; created from the checkout when missing. Defaults
	// to the branch checked out.
	// +optional
	Branch string `json:"branch,omitempty"`

	// BranchTemplate is a Go text/template of the branch to push to, over
	// .AutomationObject and .Policy (namespace-name of one policy) and
	// .Tag: an automation whose template names .Policy commits each
	// policy's update on a branch of its own, to be reviewed on its own.
	// A Windlass extension.
	// +optional
	BranchTemplate string `json:"branchTemplate,omitempty"`

	// Refspec is pushed as well, as git writes it, such as
	// refs/heads/main:refs/for/main (Gerrit).
	// +optional
	Refspec string `json:"refspec,omitempty"`

	// Options are push options (git push -o), such as GitLab's
	// merge_request.create.
	// +optional
	Options map[string]string `json:"options,omitempty"`
}

// UpdateStrategy says which files are rewritten and how.
type UpdateStrategy struct {
	// Strategy: Setters, the only one.
	// +kubebuilder:validation:Enum=Setters
	// +kubebuilder:default=Setters
	// +required
	Strategy string `json:"strategy"`

	// Path under which files are rewritten, relative to the repository's
	// root; defaults to the root.
	// +optional
	Path string `json:"path,omitempty"`
}

// ImageUpdateAutomationStatus is the observed state of an
// ImageUpdateAutomation.
type ImageUpdateAutomationStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the automation.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAutomationRunTime is when a run of the automation last found
	// something new: images elected, a branch moved, or a push (a run that
	// finds neither the images nor the branch moved checks nothing out).
	// +optional
	LastAutomationRunTime *metav1.Time `json:"lastAutomationRunTime,omitempty"`

	// LastPushCommit is the last commit pushed.
	// +optional
	LastPushCommit string `json:"lastPushCommit,omitempty"`

	// LastPushTime is when the last commit was pushed.
	// +optional
	LastPushTime *metav1.Time `json:"lastPushTime,omitempty"`

	// ObservedPolicies are the policies applied in the last run, with the
	// images they elected.
	// +optional
	ObservedPolicies ObservedPolicies `json:"observedPolicies,omitempty"`

	// ObservedSourceRevision is the revision of the branch checked out in
	// the last run, or of the commit pushed.
	// +optional
	ObservedSourceRevision string `json:"observedSourceRevision,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ObservedPolicies maps the names of policies to the images they elected.
type ObservedPolicies map[string]ImageRef

// ImageUpdateAutomation rewrites the marked image fields of a Git
// repository to the images its policies elect, then commits and pushes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=iua;imgupd;imgauto,categories=all;fluxcd;fluxcd-images
// +kubebuilder:printcolumn:name="Last run",type=string,JSONPath=`.status.lastAutomationRunTime`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type ImageUpdateAutomation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ImageUpdateAutomationSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ImageUpdateAutomationStatus `json:"status,omitempty"`
}

// GetConditions returns the object's conditions.
func (in *ImageUpdateAutomation) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the object's conditions.
func (in *ImageUpdateAutomation) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration returns the last generation the controller acted on.
func (in *ImageUpdateAutomation) GetObservedGeneration() int64 {
	return in.Status.ObservedGeneration
}

// SetObservedGeneration records the generation the controller acted on.
func (in *ImageUpdateAutomation) SetObservedGeneration(g int64) { in.Status.ObservedGeneration = g }

// SetLastHandledReconcileRequest records the reconcile request handled.
func (in *ImageUpdateAutomation) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended reports whether spec.suspend is set.
func (in *ImageUpdateAutomation) IsSuspended() bool { return in.Spec.Suspend }

// GetRequeueAfter returns spec.interval.
func (in *ImageUpdateAutomation) GetRequeueAfter() time.Duration {
	return in.Spec.Interval.Duration
}

// GetSourceNamespace returns the namespace of the GitRepository.
func (in *ImageUpdateAutomation) GetSourceNamespace() string {
	if in.Spec.SourceRef.Namespace == "" {
		return in.Namespace
	}
	return in.Spec.SourceRef.Namespace
}

// GetUpdatePath returns spec.update.path, "" (the root) by default.
func (in *ImageUpdateAutomation) GetUpdatePath() string {
	if in.Spec.Update == nil {
		return ""
	}
	return in.Spec.Update.Path
}

// GetGates returns spec.gates.
func (in *ImageUpdateAutomation) GetGates() []meta.NamespacedObjectReference {
	return in.Spec.Gates
}

// ImageUpdateAutomationList is a list of ImageUpdateAutomations.
//
// +kubebuilder:object:root=true
type ImageUpdateAutomationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageUpdateAutomation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ImageUpdateAutomation{}, &ImageUpdateAutomationList{})
}

// PushFromNamespacesAnnotation, on a GitRepository, names the namespaces
// whose ImageUpdateAutomations may push with its credentials, comma
// separated ("*" for all): an automation in another namespace than the
// GitRepository's is refused unless its namespace is listed, since a push
// writes with credentials that its namespace does not hold. A Windlass
// extension.
const PushFromNamespacesAnnotation = "windlass.dev/push-from-namespaces"
