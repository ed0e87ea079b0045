// Package scheme builds the runtime scheme that every Windlass client and
// manager uses: the Kubernetes built-in types plus every served version of
// the Windlass APIs (internal/kinds).
package scheme

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/windlass-dev/windlass/internal/kinds"
)

// New returns a scheme with the built-in and the Windlass types.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(kinds.AddToScheme(s))
	return s
}
