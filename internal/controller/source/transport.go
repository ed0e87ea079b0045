package source

import (
	"context"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
)

// sourceTransport returns the HTTP transport that a source in namespace ns
// declares with a certSecretRef and a proxySecretRef, or nil when it
// declares neither (the caller's shared default transport then serves it,
// with its pooled connections). A Secret that does not exist yet fails and
// is retried; unusable content, or a plain-HTTP proxy that the controller
// refuses, stalls.
func sourceTransport(ctx context.Context, c client.Reader, ns string, certRef, proxyRef *meta.LocalObjectReference, allowHTTP bool) (http.RoundTripper, error) {
	if certRef == nil && proxyRef == nil {
		return nil, nil
	}
	var certData, proxyData map[string][]byte
	for _, s := range []struct {
		ref  *meta.LocalObjectReference
		data *map[string][]byte
	}{{certRef, &certData}, {proxyRef, &proxyData}} {
		if s.ref == nil {
			continue
		}
		data, err := secretData(ctx, c, ns, s.ref.Name)
		if err != nil {
			return nil, outcome.Fail(sourcev1.AuthenticationFailedReason, err)
		}
		*s.data = data
	}
	tlsConfig, err := httptransport.TLSConfig(certData)
	if err != nil {
		return nil, outcome.Stall(sourcev1.AuthenticationFailedReason, fmt.Errorf("invalid TLS secret '%s': %w", certRef.Name, err))
	}
	proxy, err := httptransport.ProxyURL(proxyData)
	if err != nil {
		return nil, outcome.Stall(sourcev1.AuthenticationFailedReason, fmt.Errorf("invalid proxy secret '%s': %w", proxyRef.Name, err))
	}
	if proxy != nil && proxy.Scheme == "http" && !allowHTTP {
		return nil, outcome.Stall(meta.InsecureConnectionsDisallowedReason,
			fmt.Errorf("the proxy of secret '%s' is plain HTTP, which the controller refuses (--insecure-allow-http=false)", proxyRef.Name))
	}
	return httptransport.New(tlsConfig, proxy), nil
}
