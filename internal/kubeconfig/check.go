package kubeconfig

import (
	"maps"
	"net/url"
	"slices"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Reasons of the violations.
const (
	inlineOnly = "only inline credentials are allowed"
	inlineData = "only inline data is allowed"
	plugins    = "credential plugins run code in the controller and are not allowed"
	insecure   = "TLS verification cannot be turned off"
	plainHTTP  = "plain http is not allowed, use https"
	persisting = "the controller does not persist refreshed credentials"
)

// oidcCAKey is the auth-provider config key of the OIDC provider that
// names a file.
const oidcCAKey = "idp-certificate-authority"

// checkEntries checks every user and cluster of raw, in name order, and
// returns a *RefusedError listing every violation, or nil.
func checkEntries(raw *clientcmdapi.Config, policy Policy) error {
	var vs []Violation
	for _, name := range slices.Sorted(maps.Keys(raw.AuthInfos)) {
		if a := raw.AuthInfos[name]; a != nil {
			vs = append(vs, checkUser(name, a, policy)...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(raw.Clusters)) {
		if c := raw.Clusters[name]; c != nil {
			vs = append(vs, checkCluster(name, c, policy)...)
		}
	}
	return refused(vs)
}

// refused returns a *RefusedError of vs, or nil when vs is empty.
func refused(vs []Violation) error {
	if len(vs) == 0 {
		return nil
	}
	return &RefusedError{Violations: vs}
}

// collector appends a violation of one entry when a condition holds.
type collector struct {
	kind, name string
	vs         []Violation
}

// add records field as refused for reason when bad is true.
func (c *collector) add(bad bool, field, reason string) {
	if bad {
		c.vs = append(c.vs, Violation{Kind: c.kind, Name: c.name, Field: field, Reason: reason})
	}
}

// checkUser returns the violations of user a, named name.
func checkUser(name string, a *clientcmdapi.AuthInfo, p Policy) []Violation {
	c := collector{kind: "user", name: name}
	c.add(a.TokenFile != "", "tokenFile", inlineOnly)
	c.add(a.ClientCertificate != "", "client-certificate", inlineOnly+", use client-certificate-data")
	c.add(a.ClientKey != "", "client-key", inlineOnly+", use client-key-data")
	c.add(a.Exec != nil && !p.AllowExec, "exec", plugins)
	c.add(a.AuthProvider != nil && !p.AllowExec, "auth-provider", plugins)
	c.add(a.AuthProvider != nil && a.AuthProvider.Config[oidcCAKey] != "",
		"auth-provider config "+oidcCAKey, inlineData+", use "+oidcCAKey+"-data")
	return c.vs
}

// checkCluster returns the violations of cluster cl, named name.
func checkCluster(name string, cl *clientcmdapi.Cluster, p Policy) []Violation {
	c := collector{kind: "cluster", name: name}
	c.add(cl.CertificateAuthority != "", "certificate-authority", inlineData+", use certificate-authority-data")
	c.add(cl.InsecureSkipTLSVerify && !p.AllowInsecureTLS, "insecure-skip-tls-verify", insecure)
	c.add(isHTTP(cl.Server) && !p.AllowInsecureTLS, "server", plainHTTP)
	return c.vs
}

// isHTTP reports whether server is a plain http URL.
func isHTTP(server string) bool {
	u, err := url.Parse(server)
	return err == nil && u.Scheme == "http"
}

// checkResult checks the rest.Config client-go made from the kubeconfig, in
// case client-go filled in something the checks of the kubeconfig missed:
// no file, no plugin unless allowed, no insecure transport unless allowed.
func checkResult(cfg *rest.Config, p Policy, user, cluster string) error {
	u := collector{kind: "user", name: user}
	u.add(cfg.BearerTokenFile != "", "tokenFile", inlineOnly)
	u.add(cfg.CertFile != "", "client-certificate", inlineOnly)
	u.add(cfg.KeyFile != "", "client-key", inlineOnly)
	u.add(cfg.ExecProvider != nil && !p.AllowExec, "exec", plugins)
	u.add(cfg.AuthProvider != nil && !p.AllowExec, "auth-provider", plugins)
	u.add(cfg.AuthConfigPersister != nil, "auth-provider", persisting)
	c := collector{kind: "cluster", name: cluster}
	c.add(cfg.CAFile != "", "certificate-authority", inlineData)
	c.add(cfg.Insecure && !p.AllowInsecureTLS, "insecure-skip-tls-verify", insecure)
	c.add(!rest.IsConfigTransportTLS(*cfg) && !p.AllowInsecureTLS, "server", plainHTTP)
	return refused(append(u.vs, c.vs...))
}
