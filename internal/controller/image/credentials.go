package image

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/registry"
	"github.com/windlass-dev/windlass/internal/secret"
)

// registryOptions returns the options of a request to obj's registry: its
// credentials (spec.secretRef and the image pull secrets of
// spec.serviceAccountName), TLS settings and proxy. A Secret or service
// account that does not exist yet fails and is retried; unusable content
// stalls.
func registryOptions(ctx context.Context, c client.Reader, obj *imagev1.ImageRepository, allowHTTP bool) (registry.Options, error) {
	opts := registry.Options{
		Image:      obj.Spec.Image,
		Insecure:   obj.Spec.Insecure,
		Timeout:    obj.GetTimeout(),
		Exclusions: obj.GetExclusionList(),
	}
	if obj.Spec.Insecure && !allowHTTP {
		return opts, outcome.Stall(imagev1.ReasonInsecureDisallowed,
			fmt.Errorf("spec.insecure asks for plain HTTP, which the controller refuses (--insecure-allow-http=false)"))
	}
	var err error
	if opts.DockerConfigs, err = dockerConfigs(ctx, c, obj); err != nil {
		return opts, err
	}
	if ref := obj.Spec.CertSecretRef; ref != nil {
		data, err := secret.Data(ctx, c, obj.Namespace, ref.Name)
		if err != nil {
			return opts, outcome.Fail(imagev1.ReasonAuthenticationFailed, err)
		}
		if _, err := httptransport.TLSConfig(data); err != nil {
			return opts, outcome.Stall(imagev1.ReasonAuthenticationFailed, fmt.Errorf("invalid TLS secret '%s': %w", ref.Name, err))
		}
		opts.CA, opts.ClientCert, opts.ClientKey = data["ca.crt"], data["tls.crt"], data["tls.key"]
	}
	if ref := obj.Spec.ProxySecretRef; ref != nil {
		data, err := secret.Data(ctx, c, obj.Namespace, ref.Name)
		if err != nil {
			return opts, outcome.Fail(imagev1.ReasonAuthenticationFailed, err)
		}
		if opts.Proxy, err = httptransport.ProxyURL(data); err != nil {
			return opts, outcome.Stall(imagev1.ReasonAuthenticationFailed, fmt.Errorf("invalid proxy secret '%s': %w", ref.Name, err))
		}
	}
	return opts, nil
}

// dockerConfigs returns the docker configs of spec.secretRef, then of the
// image pull secrets of spec.serviceAccountName, in that order: the
// registry package takes the first that names the registry.
func dockerConfigs(ctx context.Context, c client.Reader, obj *imagev1.ImageRepository) ([][]byte, error) {
	var names []string
	if obj.Spec.SecretRef != nil {
		names = append(names, obj.Spec.SecretRef.Name)
	}
	if sa := obj.Spec.ServiceAccountName; sa != "" {
		var account corev1.ServiceAccount
		if err := c.Get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: sa}, &account); err != nil {
			return nil, outcome.Fail(imagev1.ReasonAuthenticationFailed,
				fmt.Errorf("service account '%s/%s': %w", obj.Namespace, sa, client.IgnoreNotFound(err)))
		}
		for _, ref := range account.ImagePullSecrets {
			names = append(names, ref.Name)
		}
	}
	configs := make([][]byte, 0, len(names))
	for _, name := range names {
		data, err := secret.Data(ctx, c, obj.Namespace, name)
		if err != nil {
			return nil, outcome.Fail(imagev1.ReasonAuthenticationFailed, err)
		}
		config, ok := data[corev1.DockerConfigJsonKey]
		if !ok {
			return nil, outcome.Stall(imagev1.ReasonAuthenticationFailed,
				fmt.Errorf("secret '%s' has no '%s' key: create it with kubectl create secret docker-registry", name, corev1.DockerConfigJsonKey))
		}
		configs = append(configs, config)
	}
	return configs, nil
}
