package oci

import (
	"context"
	"encoding/base64"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// b64 returns the base64 of s.
func b64(s string) string {
	return base64.StdEncoding.EncodeToString([]byte(s))
}

func TestKeychainFromDockerConfigs(t *testing.T) {
	ghcr := `{"auths":{"ghcr.io":{"username":"gh-user","password":"gh-pass"}}}`
	cases := map[string]struct {
		configs  []string
		registry string
		want     authn.AuthConfig
	}{
		"username and password": {configs: []string{ghcr}, registry: "ghcr.io",
			want: authn.AuthConfig{Username: "gh-user", Password: "gh-pass"}},
		"auth": {configs: []string{`{"auths":{"registry.example:5000":{"auth":"` + b64("bob:pa:ss") + `"}}}`},
			registry: "registry.example:5000", want: authn.AuthConfig{Username: "bob", Password: "pa:ss"}},
		"auth without padding": {configs: []string{`{"auths":{"r.example":{"auth":"` + base64.RawStdEncoding.EncodeToString([]byte("bob:x")) + `"}}}`},
			registry: "r.example", want: authn.AuthConfig{Username: "bob", Password: "x"}},
		"key with scheme and path": {configs: []string{`{"auths":{"https://Registry.Example/v2/":{"username":"u","password":"p"}}}`},
			registry: "registry.example", want: authn.AuthConfig{Username: "u", Password: "p"}},
		"key with http scheme": {configs: []string{`{"auths":{"http://127.0.0.1:5000":{"username":"u","password":"p"}}}`},
			registry: "127.0.0.1:5000", want: authn.AuthConfig{Username: "u", Password: "p"}},
		"docker hub legacy key": {configs: []string{`{"auths":{"https://index.docker.io/v1/":{"username":"hub","password":"p"}}}`},
			registry: "docker.io", want: authn.AuthConfig{Username: "hub", Password: "p"}},
		"docker hub short key": {configs: []string{`{"auths":{"docker.io":{"username":"hub","password":"p"}}}`},
			registry: "index.docker.io", want: authn.AuthConfig{Username: "hub", Password: "p"}},
		"tokens": {configs: []string{`{"auths":{"r.example":{"identitytoken":"id-tok","registrytoken":"reg-tok"}}}`},
			registry: "r.example", want: authn.AuthConfig{IdentityToken: "id-tok", RegistryToken: "reg-tok"}},
		"another registry": {configs: []string{ghcr}, registry: "quay.io"},
		"another port":     {configs: []string{`{"auths":{"r.example:5000":{"username":"u","password":"p"}}}`}, registry: "r.example"},
		"several, first wins": {configs: []string{`{"auths":{}}`, ghcr, `{"auths":{"ghcr.io":{"username":"other","password":"o"}}}`}, registry: "ghcr.io",
			want: authn.AuthConfig{Username: "gh-user", Password: "gh-pass"}},
		"no config": {registry: "ghcr.io"},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			var configs [][]byte
			for _, s := range c.configs {
				configs = append(configs, []byte(s))
			}
			kc, err := KeychainFromDockerConfigs(configs...)
			g.Expect(err).NotTo(HaveOccurred())
			reg, err := name.NewRegistry(c.registry)
			g.Expect(err).NotTo(HaveOccurred())
			auth, err := kc.Resolve(reg)
			g.Expect(err).NotTo(HaveOccurred())
			if c.want == (authn.AuthConfig{}) {
				g.Expect(auth).To(Equal(authn.Anonymous))
				return
			}
			got, err := auth.Authorization()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(*got).To(Equal(c.want))
		})
	}
}

func TestKeychainFromDockerConfigsRefuses(t *testing.T) {
	const secret = "Top-Secret-Value-31"
	cases := map[string]struct {
		config string
		want   string
	}{
		"not json":      {config: `{"auths": {"r.example": {"password": "` + secret, want: "docker config 2 of 2: .dockerconfigjson is not valid JSON (at byte "},
		"wrong type":    {config: `{"auths": {"r.example": {"password": 31}}}`, want: "does not have the expected shape"},
		"no auths":      {config: `{"r.example": {"password": "` + secret + `"}}`, want: `has no "auths"`},
		"bad base64":    {config: `{"auths": {"r.example": {"auth": "` + secret + `!!"}}}`, want: `the entry of registry "r.example" has an "auth" that is not base64`},
		"no colon":      {config: `{"auths": {"r.example": {"auth": "` + b64(secret) + `"}}}`, want: "is not base64 of USER:PASSWORD"},
		"not a host":    {config: `{"auths": {"https://": {"password": "` + secret + `"}}}`, want: "which is not a host"},
		"not an object": {config: `"` + secret + `"`, want: "does not have the expected shape"},
	}
	for title, c := range cases {
		t.Run(title, func(t *testing.T) {
			g := NewWithT(t)
			_, err := KeychainFromDockerConfigs([]byte(`{"auths":{}}`), []byte(c.config))
			g.Expect(err).To(MatchError(ContainSubstring(c.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring(secret))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
		})
	}
}

func TestPullWithDockerConfigCredentials(t *testing.T) {
	g := NewWithT(t)
	const password = "dockercfg-Pa55-e1b2"
	reg, o := distribution(t, password)
	files := map[string]string{"deploy/app.yaml": "kind: ConfigMap\n", "kustomization.yaml": "resources: [deploy/app.yaml]\n"}
	pushed := pushFolder(t, "oci://"+reg.Host+"/team/app:v1.2.3", files, o)
	ctx := context.Background()

	secret := `{"auths":{"https://` + reg.Host + `":{"auth":"` + b64(reg.Username+":"+password) + `"}}}`
	kc, err := KeychainFromDockerConfigs([]byte(secret))
	g.Expect(err).NotTo(HaveOccurred())
	withSecret := Options{Keychain: kc, Transport: o.Transport}
	tag, err := LatestSemverTag(ctx, pushed.Ref.Context(), "^1", "", withSecret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tag).To(Equal("v1.2.3"))
	out := filepath.Join(t.TempDir(), "out")
	pulled, err := Pull(ctx, pushed.Ref.Context().Tag(tag), out, 0, withSecret)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest).To(Equal(pushed.Digest))
	g.Expect(testutil.ReadTree(t, out)).To(Equal(files))

	// A Secret for another registry gives no credentials.
	other, err := KeychainFromDockerConfigs([]byte(`{"auths":{"registry.example":{"username":"u","password":"p"}}}`))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Pull(ctx, pushed.Ref, t.TempDir(), 0, Options{Keychain: other, Transport: o.Transport})
	g.Expect(err).To(MatchError(ContainSubstring("refused the credentials (401 Unauthorized)")))
	g.Expect(err.Error()).NotTo(ContainSubstring(password))
}
