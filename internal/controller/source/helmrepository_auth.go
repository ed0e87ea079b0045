package source

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// Keys of the Secret of a HelmRepository's spec.secretRef.
const (
	helmUsernameKey = "username"
	helmPasswordKey = "password"
)

// deprecatedHelmTLSKeys are the TLS keys that a HelmRepository's
// spec.secretRef may still hold (a deprecated form of spec.certSecretRef),
// each with the key of a certSecretRef it stands for; a later entry wins,
// so the certSecretRef names win over the legacy ones.
var deprecatedHelmTLSKeys = [][2]string{
	{"caFile", httptransport.KeyCA},
	{"certFile", httptransport.KeyClientCert},
	{"keyFile", httptransport.KeyClientKey},
	{httptransport.KeyCA, httptransport.KeyCA},
	{httptransport.KeyClientCert, httptransport.KeyClientCert},
	{httptransport.KeyClientKey, httptransport.KeyClientKey},
}

// helmCredentials are what the Secrets of a HelmRepository hold: basic
// auth, a registry configuration (type oci) and TLS settings.
type helmCredentials struct {
	username, password string
	// dockerConfig is the .dockerconfigjson of spec.secretRef, if any.
	dockerConfig []byte
	// certData holds ca.crt, tls.crt and tls.key, from spec.certSecretRef
	// or, without one, from the deprecated keys of spec.secretRef; nil
	// for the system's defaults.
	certData map[string][]byte
}

// readHelmCredentials reads the Secrets of repo. A Secret that does not
// exist yet fails and is retried; content that can never work stalls.
// No error holds a Secret's value.
func readHelmCredentials(ctx context.Context, c client.Reader, repo *sourcev1.HelmRepository) (helmCredentials, error) {
	var creds helmCredentials
	spec := repo.Spec
	if spec.SecretRef != nil {
		data, err := secretData(ctx, c, repo.Namespace, spec.SecretRef.Name)
		if err != nil {
			return creds, outcome.Fail(sourcev1.AuthenticationFailedReason, err)
		}
		creds.username, creds.password = string(data[helmUsernameKey]), string(data[helmPasswordKey])
		if (creds.username == "") != (creds.password == "") {
			return creds, outcome.Stall(sourcev1.AuthenticationFailedReason,
				fmt.Errorf("secret '%s' needs both '%s' and '%s', or neither", spec.SecretRef.Name, helmUsernameKey, helmPasswordKey))
		}
		creds.dockerConfig = data[corev1.DockerConfigJsonKey]
		creds.certData = deprecatedTLSData(data)
	}
	if spec.CertSecretRef != nil {
		data, err := secretData(ctx, c, repo.Namespace, spec.CertSecretRef.Name)
		if err != nil {
			return creds, outcome.Fail(sourcev1.AuthenticationFailedReason, err)
		}
		creds.certData = data
	}
	if creds.certData != nil {
		if _, err := httptransport.TLSConfig(creds.certData); err != nil {
			return creds, outcome.Stall(sourcev1.AuthenticationFailedReason,
				fmt.Errorf("invalid TLS settings in secret '%s': %w", tlsSecretName(repo), err))
		}
	}
	return creds, nil
}

// deprecatedTLSData returns the TLS keys of a spec.secretRef Secret under
// the names of a certSecretRef, or nil when it has none.
func deprecatedTLSData(data map[string][]byte) map[string][]byte {
	var out map[string][]byte
	for _, key := range deprecatedHelmTLSKeys {
		from, to := key[0], key[1]
		if v := data[from]; len(v) > 0 {
			if out == nil {
				out = map[string][]byte{}
			}
			out[to] = v
		}
	}
	return out
}

// tlsSecretName names the Secret the TLS settings of repo come from.
func tlsSecretName(repo *sourcev1.HelmRepository) string {
	if repo.Spec.CertSecretRef != nil {
		return repo.Spec.CertSecretRef.Name
	}
	if repo.Spec.SecretRef != nil {
		return repo.Spec.SecretRef.Name
	}
	return ""
}

// helmClientOptions returns how to reach repo, an HTTP chart repository,
// with creds: within the repository's timeout, and within the size limits
// given (zero for the defaults).
func helmClientOptions(repo *sourcev1.HelmRepository, creds helmCredentials, maxIndexSize, maxChartSize int64) repository.ClientOptions {
	return repository.ClientOptions{
		Username:        creds.username,
		Password:        creds.password,
		CertData:        creds.certData,
		PassCredentials: repo.Spec.PassCredentials,
		Timeout:         repo.GetTimeout(),
		MaxIndexSize:    maxIndexSize,
		MaxChartSize:    maxChartSize,
		UserAgent:       "windlass-source-controller",
	}
}

// helmOCIOptions returns how to reach the registry of repo, an OCI
// HelmRepository, with creds: a registry configuration or basic auth, TLS
// settings and plain HTTP when spec.insecure. No credentials of the
// controller's own environment are ever used.
func helmOCIOptions(repo *sourcev1.HelmRepository, creds helmCredentials) (oci.Options, error) {
	o := oci.Options{
		Insecure: repo.Spec.Insecure, UserAgent: "windlass-source-controller",
		CredentialsHint: "check the spec.secretRef of HelmRepository '" + repo.Name + "'",
		Username:        creds.username, Password: creds.password,
	}
	if creds.username == "" {
		var configs [][]byte
		if creds.dockerConfig != nil {
			configs = append(configs, creds.dockerConfig)
		}
		kc, err := oci.KeychainFromDockerConfigs(configs...)
		if err != nil {
			return o, outcome.Stall(sourcev1.AuthenticationFailedReason,
				fmt.Errorf("invalid registry credentials in secret '%s': %w", repo.Spec.SecretRef.Name, err))
		}
		o.Keychain = kc
	}
	if creds.certData != nil {
		tlsConfig, err := httptransport.TLSConfig(creds.certData)
		if err != nil {
			return o, outcome.Stall(sourcev1.AuthenticationFailedReason,
				fmt.Errorf("invalid TLS settings in secret '%s': %w", tlsSecretName(repo), err))
		}
		o.Transport = httptransport.New(tlsConfig, nil)
	}
	return o, nil
}

// closeIdle closes the idle connections of a transport made for one run.
func closeIdle(t http.RoundTripper) {
	if ct, ok := t.(interface{ CloseIdleConnections() }); ok {
		ct.CloseIdleConnections()
	}
}
