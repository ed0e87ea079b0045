package kubeconfig

import (
	"net/url"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// maxSize bounds the kubeconfig Parse decodes; a Secret holds at most 1 MiB.
const maxSize = 1 << 20

// Parse decodes data, a kubeconfig written by a tenant, checks it against
// policy and returns the rest.Config of its current context. Every user
// and cluster of the kubeconfig is checked, used or not. A refused
// kubeconfig yields a *RefusedError (errors.Is ErrRefused), one that cannot
// be decoded or used a *MalformedError (errors.Is ErrMalformed). No error
// carries a value of the kubeconfig.
func Parse(data []byte, policy Policy) (*rest.Config, error) {
	raw, err := load(data)
	if err != nil {
		return nil, err
	}
	if err := checkEntries(raw, policy); err != nil {
		return nil, err
	}
	user, cluster, err := current(raw)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, raw.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, foreign("unusable current context", err)
	}
	if err := checkResult(cfg, policy, user, cluster); err != nil {
		return nil, err
	}
	return cfg, nil
}

// load decodes data with client-go's decoder.
func load(data []byte) (*clientcmdapi.Config, error) {
	if len(data) > maxSize {
		return nil, malformed("larger than %d bytes", maxSize)
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, foreign("cannot decode", err)
	}
	return raw, nil
}

// current returns the names of the user and the cluster of the current
// context, after checking that they exist and that the cluster has a
// usable server. An empty user name means anonymous access.
func current(raw *clientcmdapi.Config) (user, cluster string, err error) {
	name := raw.CurrentContext
	if name == "" {
		return "", "", malformed("no current-context is set")
	}
	ctx := raw.Contexts[name]
	if ctx == nil {
		return "", "", malformed("current-context '%s' is not a context of the kubeconfig", name)
	}
	if ctx.Cluster == "" {
		return "", "", malformed("context '%s' names no cluster", name)
	}
	c := raw.Clusters[ctx.Cluster]
	if c == nil {
		return "", "", malformed("context '%s' names cluster '%s', which the kubeconfig does not define", name, ctx.Cluster)
	}
	if ctx.AuthInfo != "" && raw.AuthInfos[ctx.AuthInfo] == nil {
		return "", "", malformed("context '%s' names user '%s', which the kubeconfig does not define", name, ctx.AuthInfo)
	}
	if err := checkEndpoints(ctx.Cluster, c); err != nil {
		return "", "", err
	}
	return ctx.AuthInfo, ctx.Cluster, nil
}

// checkEndpoints checks that the server of cluster c is an http or https
// URL with a host, and its proxy-url, if any, an http, https or socks5 URL.
// The messages quote neither URL: either may carry a password.
func checkEndpoints(name string, c *clientcmdapi.Cluster) error {
	if c.Server == "" {
		return malformed("cluster '%s' has no server", name)
	}
	u, err := url.Parse(c.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return malformed("cluster '%s': server must be an https:// URL with a host", name)
	}
	if c.ProxyURL == "" {
		return nil
	}
	p, err := url.Parse(c.ProxyURL)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "socks5") || p.Host == "" {
		return malformed("cluster '%s': proxy-url must be an http, https or socks5 URL with a host", name)
	}
	return nil
}
