package kubeconfig

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fuzzSeeds returns kubeconfigs that reach every check of Parse.
func fuzzSeeds(f *testing.F) [][]byte {
	seeds := [][]byte{nil, []byte(validYAML), []byte("{}"), []byte(`{"current-context":"x"}`)}
	edits := []func(*clientcmdapi.Config){
		func(*clientcmdapi.Config) {},
		func(c *clientcmdapi.Config) { c.AuthInfos["admin"].TokenFile = "/t" },
		func(c *clientcmdapi.Config) { c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Exec: execConfig()} },
		func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc"}}
		},
		func(c *clientcmdapi.Config) {
			c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificate: "/c", ClientKey: "/k"}
		},
		func(c *clientcmdapi.Config) { c.Clusters["remote"].CertificateAuthority = "/ca" },
		func(c *clientcmdapi.Config) { c.Clusters["remote"].InsecureSkipTLSVerify = true },
		func(c *clientcmdapi.Config) { c.Clusters["remote"].Server = "http://remote:8080" },
		func(c *clientcmdapi.Config) { c.Clusters["remote"].ProxyURL = "http://u:p@proxy:3128" },
	}
	for _, edit := range edits {
		kc := validConfig([]byte("ca"))
		edit(kc)
		seeds = append(seeds, encode(f, kc))
	}
	return seeds
}

// FuzzParse checks that Parse never panics, sorts every error into
// ErrRefused or ErrMalformed, and never returns a config that names a file
// or carries what the policy refuses.
func FuzzParse(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed, false, false)
		f.Add(seed, true, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, allowExec, allowInsecure bool) {
		p := Policy{AllowExec: allowExec, AllowInsecureTLS: allowInsecure}
		cfg, err := Parse(data, p)
		if err != nil {
			if cfg != nil || !(errors.Is(err, ErrRefused) || errors.Is(err, ErrMalformed)) {
				t.Fatalf("error %v with config %v", err, cfg != nil)
			}
			return
		}
		if why := unsafeResult(cfg, p); why != "" {
			t.Fatalf("the config %s under policy %+v", why, p)
		}
	})
}

// FuzzParseHidesSecrets surrounds the token of a valid kubeconfig with
// arbitrary text, which may break the document in any way, and checks that
// no error repeats the token, unless the edit made it the name of an entry
// (names are reported on purpose).
func FuzzParseHidesSecrets(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"!!int ", ""}, {"*", ""}, {"[", ", {]"}, {"'a`b\"", "'"}, {"x\n  ", ": 1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, prefix, suffix string) {
		data := strings.Replace(validYAML, tokenCanary, prefix+tokenCanary+suffix, 1)
		_, err := Parse([]byte(data), Policy{})
		if err == nil || !strings.Contains(err.Error(), tokenCanary) || namesContain([]byte(data), tokenCanary) {
			return
		}
		t.Fatalf("the error repeats the token: %v", err)
	})
}

// namesContain reports whether a name of an entry of the kubeconfig in data,
// or a name a context refers to, contains s.
func namesContain(data []byte, s string) bool {
	raw, err := clientcmd.Load(data)
	if err != nil {
		return false
	}
	names := []string{raw.CurrentContext}
	for name, ctx := range raw.Contexts {
		names = append(names, name)
		if ctx != nil {
			names = append(names, ctx.Cluster, ctx.AuthInfo)
		}
	}
	for name := range raw.Clusters {
		names = append(names, name)
	}
	for name := range raw.AuthInfos {
		names = append(names, name)
	}
	for _, name := range names {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}
