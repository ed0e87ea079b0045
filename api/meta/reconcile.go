package meta

const (
	// ReconcileRequestAnnotation asks a controller to reconcile an object at
	// once. Its value is an opaque token, by convention a timestamp, that the
	// controller echoes in status.lastHandledReconcileAt once it has acted.
	ReconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"

	// ForceRequestAnnotation asks the helm controller to install or upgrade
	// a HelmRelease once even when nothing changed (together with
	// ReconcileRequestAnnotation); its token is echoed in
	// status.lastHandledForceAt.
	ForceRequestAnnotation = "reconcile.fluxcd.io/forceAt"

	// ResetRequestAnnotation asks the helm controller to reset a
	// HelmRelease's failure counters (together with
	// ReconcileRequestAnnotation); its token is echoed in
	// status.lastHandledResetAt.
	ResetRequestAnnotation = "reconcile.fluxcd.io/resetAt"

	// Finalizer is set on every object that a Windlass controller cleans up
	// after.
	Finalizer = "finalizers.fluxcd.io"
)

// ReconcileRequestStatus records the last reconcile request a controller
// handled.
type ReconcileRequestStatus struct {
	// LastHandledReconcileAt holds the value of the most recent reconcile
	// request annotation that the controller acted on.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// GetLastHandledReconcileRequest returns the last handled reconcile request.
func (in ReconcileRequestStatus) GetLastHandledReconcileRequest() string {
	return in.LastHandledReconcileAt
}

// SetLastHandledReconcileRequest records a handled reconcile request.
func (in *ReconcileRequestStatus) SetLastHandledReconcileRequest(token string) {
	in.LastHandledReconcileAt = token
}

// ReconcileAnnotationValue returns the value of the reconcile request
// annotation, and whether the annotation is set.
func ReconcileAnnotationValue(annotations map[string]string) (string, bool) {
	v, ok := annotations[ReconcileRequestAnnotation]
	return v, ok
}
