package kubeconfig

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestParseAcceptsInlineConfig(t *testing.T) {
	ca, client := newPEMPair(t), newPEMPair(t)
	tests := []struct {
		name   string
		mutate func(*clientcmdapi.Config)
		check  func(Gomega, *rest.Config)
	}{
		{"server, CA data and token", func(*clientcmdapi.Config) {}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.Host).To(Equal("https://remote.example.com:6443"))
			g.Expect(cfg.CAData).To(Equal(ca.cert))
			g.Expect(cfg.BearerToken).To(Equal(tokenCanary))
		}},
		{"client certificate and key data", func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: client.cert, ClientKeyData: client.key}
		}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.CertData).To(Equal(client.cert))
			g.Expect(cfg.KeyData).To(Equal(client.key))
			g.Expect(cfg.BearerToken).To(BeEmpty())
		}},
		{"username and password", func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Username: "admin", Password: passwordCanary}
		}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.Username).To(Equal("admin"))
			g.Expect(cfg.Password).To(Equal(passwordCanary))
		}},
		{"impersonation", func(c *clientcmdapi.Config) {
			a := c.AuthInfos["admin"]
			a.Impersonate, a.ImpersonateUID, a.ImpersonateGroups = "jane", "42", []string{"devs"}
			a.ImpersonateUserExtra = map[string][]string{"scope": {"x"}}
		}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.Impersonate).To(Equal(rest.ImpersonationConfig{
				UserName: "jane", UID: "42", Groups: []string{"devs"}, Extra: map[string][]string{"scope": {"x"}}}))
		}},
		{"proxy-url and tls-server-name", func(c *clientcmdapi.Config) {
			c.Clusters["remote"].ProxyURL = "socks5://proxy.example.com:1080"
			c.Clusters["remote"].TLSServerName = "api.internal"
		}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.ServerName).To(Equal("api.internal"))
			g.Expect(cfg.Proxy).NotTo(BeNil())
			u, err := cfg.Proxy(&http.Request{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(u.String()).To(Equal("socks5://proxy.example.com:1080"))
		}},
		{"anonymous: the context names no user", func(c *clientcmdapi.Config) {
			c.Contexts["ctx"].AuthInfo = ""
		}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.BearerToken).To(BeEmpty())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kc := validConfig(ca.cert)
			tt.mutate(kc)
			cfg, err := Parse(encode(t, kc), Policy{})
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, cfg)
			g.Expect(unsafeResult(cfg, Policy{})).To(BeEmpty())
			_, err = rest.HTTPClientFor(cfg)
			g.Expect(err).NotTo(HaveOccurred(), "the config makes a working client")
		})
	}
}

// TestClientGoReadsFiles shows the threat the package exists for: without
// it, client-go reads the tenant-named file and sends its content.
func TestClientGoReadsFiles(t *testing.T) {
	g := NewWithT(t)
	kc := validConfig(newPEMPair(t).cert)
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: canaryFile(t)}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(encode(t, kc))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.BearerToken).To(Equal(fileCanary))
}

func TestParseRefuses(t *testing.T) {
	ca := newPEMPair(t)
	tests := []struct {
		name        string
		mutate      func(c *clientcmdapi.Config, path string)
		policy      Policy
		entry, text string
	}{
		{"tokenFile", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: p}
		}, Policy{}, "user 'admin'", "tokenFile is refused: only inline credentials are allowed"},
		{"tokenFile next to a token", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"].TokenFile = p
		}, Policy{}, "user 'admin'", "tokenFile is refused"},
		{"tokenFile whatever the policy", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: p}
		}, Policy{AllowExec: true, AllowInsecureTLS: true}, "user 'admin'", "tokenFile is refused"},
		{"tokenFile of a user no context uses", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["spare"] = &clientcmdapi.AuthInfo{TokenFile: p}
		}, Policy{}, "user 'spare'", "tokenFile is refused"},
		{"client-certificate file", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: p, ClientKeyData: []byte("k")}
		}, Policy{}, "user 'admin'", "client-certificate is refused: only inline credentials are allowed"},
		{"client-key file", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("c"), ClientKey: p}
		}, Policy{}, "user 'admin'", "client-key is refused: only inline credentials are allowed"},
		{"exec", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Exec: execConfig()}
			c.AuthInfos["admin"].Exec.Args = []string{p}
		}, Policy{AllowInsecureTLS: true}, "user 'admin'", "exec is refused: credential plugins"},
		{"auth-provider", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}
		}, Policy{AllowInsecureTLS: true}, "user 'admin'", "auth-provider is refused: credential plugins"},
		{"auth-provider CA file whatever the policy", func(c *clientcmdapi.Config, p string) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{
				Name: "oidc", Config: map[string]string{"idp-certificate-authority": p}}}
		}, Policy{AllowExec: true}, "user 'admin'", "auth-provider config idp-certificate-authority is refused"},
		{"certificate-authority file", func(c *clientcmdapi.Config, p string) {
			c.Clusters["remote"].CertificateAuthority = p
			c.Clusters["remote"].CertificateAuthorityData = nil
		}, Policy{AllowExec: true, AllowInsecureTLS: true}, "cluster 'remote'", "certificate-authority is refused: only inline data is allowed"},
		{"insecure-skip-tls-verify", func(c *clientcmdapi.Config, p string) {
			c.Clusters["remote"].InsecureSkipTLSVerify = true
			c.Clusters["remote"].CertificateAuthorityData = nil
		}, Policy{AllowExec: true}, "cluster 'remote'", "insecure-skip-tls-verify is refused"},
		{"plain http server", func(c *clientcmdapi.Config, p string) {
			c.Clusters["remote"].Server = "http://remote.example.com:8080"
		}, Policy{AllowExec: true}, "cluster 'remote'", "server is refused: plain http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			path := canaryFile(t)
			kc := validConfig(ca.cert)
			tt.mutate(kc, path)
			cfg, err := Parse(encode(t, kc), tt.policy)
			t.Log(err)
			g.Expect(cfg).To(BeNil())
			g.Expect(errors.Is(err, ErrRefused)).To(BeTrue(), "%v", err)
			g.Expect(errors.Is(err, ErrMalformed)).To(BeFalse())
			var refusal *RefusedError
			g.Expect(errors.As(err, &refusal)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring(tt.entry + ": " + tt.text))
			for _, secret := range []string{fileCanary, path, tokenCanary, string(ca.cert)} {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			}
		})
	}
}

func TestParseListsEveryViolationInOrder(t *testing.T) {
	g := NewWithT(t)
	kc := validConfig(nil)
	kc.AuthInfos["b"] = &clientcmdapi.AuthInfo{TokenFile: "/t", Exec: execConfig()}
	kc.AuthInfos["a"] = &clientcmdapi.AuthInfo{ClientKey: "/k", ClientCertificateData: []byte("c")}
	kc.Clusters["remote"].InsecureSkipTLSVerify = true
	_, err := Parse(encode(t, kc), Policy{})
	var refusal *RefusedError
	g.Expect(errors.As(err, &refusal)).To(BeTrue())
	g.Expect(refusal.Violations).To(Equal([]Violation{
		{Kind: "user", Name: "a", Field: "client-key", Reason: inlineOnly + ", use client-key-data"},
		{Kind: "user", Name: "b", Field: "tokenFile", Reason: inlineOnly},
		{Kind: "user", Name: "b", Field: "exec", Reason: plugins},
		{Kind: "cluster", Name: "remote", Field: "insecure-skip-tls-verify", Reason: insecure},
	}))
	g.Expect(err.Error()).To(HavePrefix("kubeconfig refused: user 'a': client-key is refused: "))
	g.Expect(strings.Count(err.Error(), "; ")).To(Equal(3))
}

func TestParsePolicyAllows(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*clientcmdapi.Config)
		policy Policy
		check  func(Gomega, *rest.Config)
	}{
		{"exec with AllowExec", func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Exec: execConfig()}
		}, Policy{AllowExec: true}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.ExecProvider).NotTo(BeNil())
			g.Expect(cfg.ExecProvider.Command).To(Equal("/bin/true"))
		}},
		{"auth-provider with AllowExec", func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{
				Name: "oidc", Config: map[string]string{"idp-certificate-authority-data": "Y2E="}}}
		}, Policy{AllowExec: true}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.AuthProvider).NotTo(BeNil())
			g.Expect(cfg.AuthConfigPersister).To(BeNil())
		}},
		{"insecure-skip-tls-verify with AllowInsecureTLS", func(c *clientcmdapi.Config) {
			c.Clusters["remote"].InsecureSkipTLSVerify = true
			c.Clusters["remote"].CertificateAuthorityData = nil
		}, Policy{AllowInsecureTLS: true}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.Insecure).To(BeTrue())
			g.Expect(cfg.BearerToken).To(Equal(tokenCanary))
		}},
		{"http server with AllowInsecureTLS: client-go sends no credential", func(c *clientcmdapi.Config) {
			c.Clusters["remote"].Server = "http://remote.example.com:8080"
			c.Clusters["remote"].CertificateAuthorityData = nil
		}, Policy{AllowInsecureTLS: true}, func(g Gomega, cfg *rest.Config) {
			g.Expect(cfg.Host).To(Equal("http://remote.example.com:8080"))
			g.Expect(cfg.BearerToken).To(BeEmpty())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kc := validConfig(nil)
			tt.mutate(kc)
			cfg, err := Parse(encode(t, kc), tt.policy)
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, cfg)
			g.Expect(unsafeResult(cfg, tt.policy)).To(BeEmpty())
		})
	}
}

// validYAML is a usable kubeconfig the malformed cases edit as text.
const validYAML = `apiVersion: v1
kind: Config
current-context: ctx
contexts:
- name: ctx
  context: {cluster: remote, user: admin}
clusters:
- name: remote
  cluster:
    server: https://remote.example.com:6443
users:
- name: admin
  user:
    token: ` + tokenCanary + `
`

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name, old, new, text string
	}{
		{"YAML syntax", "  user:\n", "  user:\n  x\n", "cannot decode: yaml: line"},
		{"type mismatch", "token: " + tokenCanary, "token: [" + tokenCanary + "]", "cannot unmarshal array"},
		{"not a kubeconfig", "kind: Config", "kind: Secret", "cannot decode: no kind '…'"},
		{"empty document", validYAML, "", "no current-context is set"},
		{"no current context", "current-context: ctx\n", "", "no current-context is set"},
		{"current context missing", "current-context: ctx", "current-context: other", "current-context 'other' is not a context"},
		{"context names no cluster", "cluster: remote, ", "", "context 'ctx' names no cluster"},
		{"missing cluster", "cluster: remote,", "cluster: gone,", "context 'ctx' names cluster 'gone', which the kubeconfig does not define"},
		{"missing user", "user: admin}", "user: gone}", "context 'ctx' names user 'gone', which the kubeconfig does not define"},
		{"no server", "    server: https://remote.example.com:6443\n", "", "cluster 'remote' has no server"},
		{"server without scheme", "https://remote.example.com:6443", "remote.example.com:6443", "server must be an https:// URL"},
		{"server with another scheme", "https://remote", "unix://remote", "server must be an https:// URL"},
		{"bad proxy-url", "    server:", "    proxy-url: ftp://proxy\n    server:", "proxy-url must be an http, https or socks5 URL"},
		{"client-go validation", "    token:", "    username: admin\n    token:", "unusable current context: invalid configuration: more than one authentication method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := strings.Replace(validYAML, tt.old, tt.new, 1)
			g.Expect(data).NotTo(Equal(validYAML), "the case edits the document")
			cfg, err := Parse([]byte(data), Policy{})
			t.Log(err)
			g.Expect(cfg).To(BeNil())
			g.Expect(errors.Is(err, ErrMalformed)).To(BeTrue(), "%v", err)
			g.Expect(errors.Is(err, ErrRefused)).To(BeFalse())
			var m *MalformedError
			g.Expect(errors.As(err, &m)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring(tt.text))
			g.Expect(err.Error()).NotTo(ContainSubstring(tokenCanary))
		})
	}
}

func TestParseRefusesOversizedInput(t *testing.T) {
	g := NewWithT(t)
	_, err := Parse([]byte(strings.Repeat("#", maxSize+1)), Policy{})
	g.Expect(errors.Is(err, ErrMalformed)).To(BeTrue())
}

// TestErrorsHideSecrets plants canaries where decoders like to quote the
// input, and checks that no error repeats them.
func TestErrorsHideSecrets(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"tagged token", "token: ", "token: !!int "},
		{"token as an alias", "token: ", "token: *"},
		{"token as a kind", "kind: Config", "kind: " + tokenCanary},
		{"token as an apiVersion", "apiVersion: v1", "apiVersion: " + tokenCanary},
		{"token as a map key next to a YAML 1.1 boolean", "token: " + tokenCanary, "token: x\n    as: y\n  " + tokenCanary + ": 1"},
		{"token in a flow sequence", "token: " + tokenCanary, "token: [" + tokenCanary + ", {]"},
		{"token in a JSON-ish scalar", "token: " + tokenCanary, `token: "` + tokenCanary},
		{"token with quotes", "token: " + tokenCanary, "token: !!int 'a`b\"" + tokenCanary + "'"},
		{"insecure flag holding a secret", "    server:", "    insecure-skip-tls-verify: " + passwordCanary + "\n    server:"},
		{"password in a server URL", "https://remote", "ftp://u:" + passwordCanary + "@remote"},
		{"password in an unparsable server URL", "https://remote.example.com:6443", "https://u:" + passwordCanary + "@remote:port"},
		{"password in a proxy URL", "    server:", "    proxy-url: ftp://u:" + proxyCanary + "@proxy\n    server:"},
		{"password in an unparsable proxy URL", "    server:", "    proxy-url: \"http://u:" + proxyCanary + "@proxy:port\"\n    server:"},
		{"password and token", "    token:", "    username: admin\n    password: " + passwordCanary + "\n    token:"},
		{"key data not base64", "    token:", "    client-key-data: " + passwordCanary + "!!\n    token:"},
		{"refused file next to secrets", "    token:", "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n    password: " + passwordCanary + "\n    token:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := strings.Replace(validYAML, tt.old, tt.new, 1)
			g.Expect(data).NotTo(Equal(validYAML), "the case edits the document")
			_, err := Parse([]byte(data), Policy{})
			t.Log(err)
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.Is(err, ErrMalformed) || errors.Is(err, ErrRefused)).To(BeTrue())
			for _, secret := range []string{tokenCanary, passwordCanary, proxyCanary, "serviceaccount"} {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			}
		})
	}
}

func TestScrub(t *testing.T) {
	tests := []struct{ in, want string }{
		{"yaml: line 6: could not find expected ':'", "yaml: line 6: could not find expected '…'"},
		{"yaml: cannot decode !!str `s3cr3t` as a !!int", "yaml: cannot decode !!str '…' as a !!int"},
		{`no kind "X" is registered for version "v1" in scheme "s"`, "no kind '…'"},
		{"value `a`b` here", "value '…' here"},
		{`one "quote then secret`, "one '…'"},
		{"json: cannot unmarshal array into Go struct field", "json: cannot unmarshal array into Go struct field"},
		{strings.Repeat("x", maxErrorLen+10), strings.Repeat("x", maxErrorLen) + "…"},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		g.Expect(scrub(tt.in)).To(Equal(tt.want))
	}
}
