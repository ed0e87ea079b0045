package kinds

import (
	"k8s.io/apimachinery/pkg/runtime"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	imagev1beta2 "github.com/windlass-dev/windlass/api/image/v1beta2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	kustomizev1beta1 "github.com/windlass-dev/windlass/api/kustomize/v1beta1"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta2 "github.com/windlass-dev/windlass/api/notification/v1beta2"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourcev1beta1 "github.com/windlass-dev/windlass/api/source/v1beta1"
	sourcev1beta2 "github.com/windlass-dev/windlass/api/source/v1beta2"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

// apiVersions register the Go types of every API version Windlass serves:
// the versions of All, and the older ones the CRDs still serve.
var apiVersions = []func(*runtime.Scheme) error{
	sourcev1.AddToScheme, sourcev1beta1.AddToScheme, sourcev1beta2.AddToScheme,
	sourceextv1beta1.AddToScheme,
	kustomizev1.AddToScheme, kustomizev1beta1.AddToScheme,
	gatingv1alpha1.AddToScheme,
	helmv2.AddToScheme,
	notificationv1beta3.AddToScheme, notificationv1beta2.AddToScheme, notificationv1.AddToScheme,
	imagev1.AddToScheme, imagev1beta2.AddToScheme,
}

// AddToScheme registers the Go types of every API version Windlass serves
// with s.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range apiVersions {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}
