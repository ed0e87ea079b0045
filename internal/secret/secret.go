// Package secret reads the Secrets that Windlass objects name (a
// secretRef, a certSecretRef, a proxySecretRef), with the error every
// controller reports when one is missing. The message names the Secret
// only, never its data.
package secret

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Data returns the data of the Secret name in namespace ns.
func Data(ctx context.Context, c client.Reader, ns, name string) (map[string][]byte, error) {
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret '%s/%s' not found", ns, name)
		}
		return nil, fmt.Errorf("getting secret '%s/%s': %w", ns, name, err)
	}
	return s.Data, nil
}
