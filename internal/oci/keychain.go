package oci

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// dockerHubAliases are the host names of Docker Hub's registry, which
// references name index.docker.io.
var dockerHubAliases = map[string]bool{"docker.io": true, "index.docker.io": true, "registry-1.docker.io": true}

// KeychainFromDockerConfigs returns a keychain of the credentials in
// configs, each the content of the .dockerconfigjson key of a
// kubernetes.io/dockerconfigjson Secret:
//
//	{"auths": {"HOST": {"auth": "base64(USER:PASSWORD)"}}}
//	{"auths": {"HOST": {"username": "USER", "password": "PASSWORD"}}}
//
// (or "identitytoken", "registrytoken"). HOST matches a registry by its
// host and port, written with or without a scheme and a path
// ("https://ghcr.io/v2/" is ghcr.io); docker.io, index.docker.io and
// registry-1.docker.io are the same registry. When several entries name a
// registry, the first config wins, and within one config the first key in
// byte order. A registry without an entry is reached anonymously. Errors
// name the config and the host, and never quote the content.
func KeychainFromDockerConfigs(configs ...[]byte) (authn.Keychain, error) {
	kc := &dockerConfigKeychain{configs: map[string]authn.AuthConfig{}}
	for i, data := range configs {
		if err := kc.add(data); err != nil {
			return nil, fmt.Errorf("docker config %d of %d: %w", i+1, len(configs), err)
		}
	}
	return kc, nil
}

// dockerConfigKeychain is the keychain of KeychainFromDockerConfigs.
type dockerConfigKeychain struct {
	// configs maps registry keys (see registryKey) to their credentials.
	configs map[string]authn.AuthConfig
	// secrets are all the credentials of the configs, as written there
	// and as sent, for describe to hide.
	secrets []string
}

// Resolve implements authn.Keychain.
func (kc *dockerConfigKeychain) Resolve(target authn.Resource) (authn.Authenticator, error) {
	if cfg, ok := kc.configs[registryKey(target.RegistryStr())]; ok {
		return authn.FromConfig(cfg), nil
	}
	return authn.Anonymous, nil
}

// dockerConfig is the content of a .dockerconfigjson.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

// dockerAuth is the entry of one registry.
type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

// add adds the entries of one config that no earlier config gave.
func (kc *dockerConfigKeychain) add(data []byte) error {
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return dockerConfigError(err)
	}
	if cfg.Auths == nil {
		return errors.New(`.dockerconfigjson has no "auths": write {"auths": {"HOST": {"username": "USER", "password": "PASSWORD"}}}`)
	}
	hosts := make([]string, 0, len(cfg.Auths))
	for host := range cfg.Auths {
		hosts = append(hosts, host)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		key := registryKey(host)
		if key == "" {
			return fmt.Errorf(".dockerconfigjson names the registry %q, which is not a host", host)
		}
		entry := cfg.Auths[host]
		ac, err := entry.config()
		if err != nil {
			return fmt.Errorf(".dockerconfigjson: the entry of registry %q %w", host, err)
		}
		kc.secrets = append(kc.secrets, nonEmpty(entry.Auth, ac.Password, ac.IdentityToken, ac.RegistryToken)...)
		if ac.Password != "" {
			kc.secrets = append(kc.secrets, basicAuth(ac.Username, ac.Password))
		}
		if _, known := kc.configs[key]; !known {
			kc.configs[key] = ac
		}
	}
	return nil
}

// config returns the credentials of an entry.
func (a dockerAuth) config() (authn.AuthConfig, error) {
	cfg := authn.AuthConfig{Username: a.Username, Password: a.Password,
		IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
	if a.Auth == "" {
		return cfg, nil
	}
	decoded, err := base64.StdEncoding.DecodeString(a.Auth)
	if err != nil {
		decoded, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(a.Auth, "="))
	}
	if err != nil {
		return cfg, errors.New(`has an "auth" that is not base64: write base64 of USER:PASSWORD`)
	}
	user, pass, ok := strings.Cut(string(decoded), ":")
	if !ok || user == "" {
		return cfg, errors.New(`has an "auth" that is not base64 of USER:PASSWORD`)
	}
	cfg.Username, cfg.Password = user, pass
	return cfg, nil
}

// dockerConfigError describes a JSON error without quoting the content.
func dockerConfigError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf(".dockerconfigjson is not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf(`.dockerconfigjson does not have the expected shape (a JSON %s at %q, byte %d): `+
			`write {"auths": {"HOST": {"username": "USER", "password": "PASSWORD"}}}`, typ.Value, typ.Field, typ.Offset)
	}
	return errors.New(".dockerconfigjson is not valid JSON")
}

// registryKey returns the host[:port] of a registry written as a host, a
// URL or a Docker config key, lower-cased, with Docker Hub's names as
// index.docker.io; "" when there is no host.
func registryKey(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if _, rest, ok := strings.Cut(s, "://"); ok {
		s = rest
	}
	s, _, _ = strings.Cut(s, "/")
	if dockerHubAliases[s] {
		return name.DefaultRegistry
	}
	return s
}
