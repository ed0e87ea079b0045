package gitsource

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/githubapp"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/testutil/githubapi"
)

func TestCheckProvider(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		sa       string
		wantMsg  string
	}{
		{name: "default"},
		{name: "generic", provider: sourcev1.GitProviderGeneric},
		{name: "github", provider: sourcev1.GitProviderGitHub},
		{name: "azure", provider: sourcev1.GitProviderAzure, wantMsg: "provider 'azure' is not served"},
		{name: "aws", provider: sourcev1.GitProviderAWS, wantMsg: "provider 'aws' is not served"},
		{name: "service account", sa: "deployer", wantMsg: "spec.serviceAccountName 'deployer' is not served"},
		{name: "service account with aws", provider: sourcev1.GitProviderAWS, sa: "deployer", wantMsg: "provider 'aws' with spec.serviceAccountName 'deployer' is not served"},
		{name: "service account with github", provider: sourcev1.GitProviderGitHub, sa: "deployer", wantMsg: "'deployer' is not served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &sourcev1.GitRepository{Spec: sourcev1.GitRepositorySpec{Provider: tt.provider, ServiceAccountName: tt.sa}}
			err := CheckProvider(obj)
			if tt.wantMsg == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			expectStall(g, err, meta.UnsupportedProviderReason)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMsg))
		})
	}
}

// expectStall asserts that err stalls with reason.
func expectStall(g *WithT, err error, reason string) {
	var stalling *outcome.Stalling
	g.Expect(errors.As(err, &stalling)).To(BeTrue(), "stalls: %v", err)
	g.Expect(stalling.Reason).To(Equal(reason))
}

func TestGitHubAuth(t *testing.T) {
	key, pemKey := githubapi.NewKey(t)
	_, otherPEM := githubapi.NewKey(t)
	api := githubapi.NewForTest(t, githubapi.Options{AppID: "42", InstallationID: "7", PublicKey: &key.PublicKey, TokenTTL: time.Hour})
	app := func(pem []byte, extra ...string) map[string][]byte {
		d := map[string][]byte{githubapp.KeyAppID: []byte("42"), githubapp.KeyInstallationID: []byte("7"),
			githubapp.KeyPrivateKey: pem, githubapp.KeyBaseURL: []byte(api.URL)}
		for i := 0; i+1 < len(extra); i += 2 {
			d[extra[i]] = []byte(extra[i+1])
		}
		return d
	}
	tests := []struct {
		name       string
		url        string
		noSecret   bool
		data       map[string][]byte
		insecure   bool
		wantReason string
		wantStall  bool
		wantMsg    string
	}{
		{name: "token", data: app(pemKey), insecure: true},
		{name: "no secretRef", noSecret: true, wantReason: sourcev1.InvalidProviderConfigurationReason, wantStall: true, wantMsg: "needs spec.secretRef"},
		{name: "ssh url", url: "ssh://git@h/r.git", data: app(pemKey), wantReason: sourcev1.InvalidProviderConfigurationReason, wantStall: true, wantMsg: "not an https URL"},
		{name: "missing key", data: app(pemKey, githubapp.KeyPrivateKey, ""), wantReason: sourcev1.AuthenticationFailedReason, wantStall: true, wantMsg: "'githubAppPrivateKey' is missing"},
		{name: "password too", data: app(pemKey, "password", "p"), insecure: true, wantReason: sourcev1.AuthenticationFailedReason, wantStall: true, wantMsg: "'password' cannot be combined"},
		{name: "plain http api refused", data: app(pemKey), wantReason: meta.InsecureConnectionsDisallowedReason, wantStall: true, wantMsg: "'githubAppBaseURL' of secret 'app' is plain HTTP"},
		{name: "wrong key is retried", data: app(otherPEM), insecure: true, wantReason: sourcev1.AuthenticationFailedReason, wantMsg: "401 Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"},
				Spec: sourcev1.GitRepositorySpec{URL: "https://h/r.git", Provider: sourcev1.GitProviderGitHub, SecretRef: &meta.LocalObjectReference{Name: "app"}}}
			if tt.url != "" {
				obj.Spec.URL = tt.url
			}
			if tt.noSecret {
				obj.Spec.SecretRef = nil
			}
			u, err := url.Parse(obj.Spec.URL)
			g.Expect(err).NotTo(HaveOccurred())
			auth, err := GitHubAuth(context.Background(), obj, *u, tt.data, nil,
				Options{AllowInsecureHTTP: tt.insecure, Tokens: githubapp.NewCache(4)})
			if tt.wantReason == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(auth.Username).To(Equal(githubapp.AccessTokenUsername))
				g.Expect(auth.Password).To(Equal(api.LastToken()))
				g.Expect(auth.Host).To(Equal("h"))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantMsg)))
			g.Expect(outcome.ReasonOf(err, "")).To(Equal(tt.wantReason))
			var stalling *outcome.Stalling
			g.Expect(errors.As(err, &stalling)).To(Equal(tt.wantStall))
			g.Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
		})
	}
}
