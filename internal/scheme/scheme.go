// Package scheme builds the runtime scheme that every Windlass client and
// manager uses: the Kubernetes built-in types plus every served version of
// the Windlass APIs.
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

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
)

// New returns a scheme with the built-in and the Windlass types.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(sourcev1beta1.AddToScheme(s))
	utilruntime.Must(sourcev1beta2.AddToScheme(s))
	utilruntime.Must(kustomizev1.AddToScheme(s))
	utilruntime.Must(kustomizev1beta1.AddToScheme(s))
	utilruntime.Must(gatingv1alpha1.AddToScheme(s))
	utilruntime.Must(helmv2.AddToScheme(s))
	utilruntime.Must(notificationv1beta3.AddToScheme(s))
	utilruntime.Must(notificationv1beta2.AddToScheme(s))
	utilruntime.Must(notificationv1.AddToScheme(s))
	utilruntime.Must(imagev1.AddToScheme(s))
	utilruntime.Must(imagev1beta2.AddToScheme(s))
	return s
}
