package source

import (
	"context"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/githubapp"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil/githubapi"
)

// githubApp is a GitHub App installation served on loopback, and a git
// server that accepts only the last token the API handed out.
type githubApp struct {
	api    *githubapi.Server
	git    *gitserver.Server
	url    string
	key    *rsa.PrivateKey
	pemKey []byte
}

// newGitHubApp serves a GitHub API (under prefix) and a repository r.git
// with one commit on main, reachable with the API's tokens only.
func newGitHubApp(t *testing.T, prefix string, ttl time.Duration) *githubApp {
	key, pemKey := githubapi.NewKey(t)
	a := &githubApp{key: key, pemKey: pemKey, git: gitserver.NewForTest(t)}
	a.api = githubapi.NewForTest(t, githubapi.Options{AppID: "4242", InstallationID: "77",
		PublicKey: &key.PublicKey, PathPrefix: prefix, TokenTTL: ttl})
	a.git.SetBasicAuth(githubapp.AccessTokenUsername, "no-token-issued-yet")
	a.api.OnToken(func(token string) { a.git.SetBasicAuth(githubapp.AccessTokenUsername, token) })
	a.url = a.git.MustStartHTTP(t) + "/r.git"
	a.git.MustInitRepo(t, "r.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")
	return a
}

// secret returns the data of the app's Secret, signed with pemKey.
func (a *githubApp) secret(pemKey []byte) map[string][]byte {
	return map[string][]byte{
		githubapp.KeyAppID:          []byte("4242"),
		githubapp.KeyInstallationID: []byte("77"),
		githubapp.KeyPrivateKey:     pemKey,
		githubapp.KeyBaseURL:        []byte(a.api.URL),
	}
}

// pemBody returns a line of the PEM key's base64 body, to look for in
// what the controller writes.
func pemBody(pemKey []byte) string {
	return strings.Split(string(pemKey), "\n")[2]
}

// createGitHubRepository creates a GitRepository of a with provider github
// and a Secret of data.
func createGitHubRepository(g *WithT, ns, name string, a *githubApp, data map[string][]byte) *sourcev1.GitRepository {
	obj := newGitRepository(ns, name, a.url)
	obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
	obj.Spec.Provider = sourcev1.GitProviderGitHub
	obj.Spec.SecretRef = createSecret(g, ns, name, data)
	g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
	return obj
}

func TestGitRepository_GitHubApp(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name       string
		prefix     string
		otherKey   bool
		drop       string
		wantReady  bool
		wantStall  bool
		wantReason string
		wantMsg    string
	}{
		{name: "app token", wantReady: true},
		{name: "enterprise base url", prefix: "/api/v3", wantReady: true},
		{name: "wrong private key", otherKey: true, wantReason: sourcev1.AuthenticationFailedReason,
			wantMsg: "401 Unauthorized: A JSON web token could not be decoded"},
		{name: "missing installation id", drop: githubapp.KeyInstallationID, wantStall: true,
			wantReason: sourcev1.AuthenticationFailedReason, wantMsg: "'githubAppInstallationID' is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			a := newGitHubApp(t, tt.prefix, time.Hour)
			pemKey := a.pemKey
			if tt.otherKey {
				_, pemKey = githubapi.NewKey(t)
			}
			data := a.secret(pemKey)
			delete(data, tt.drop)
			obj := createGitHubRepository(g, ns, strings.ReplaceAll(tt.name, " ", "-"), a, data)
			var got *sourcev1.GitRepository
			switch {
			case tt.wantReady:
				got = waitFor(g, obj, readyAt(""))
				g.Expect(a.api.Issued()).To(Equal(int64(1)))
				expectNoSecretIn(g, got, a.api.LastToken())
			case tt.wantStall:
				got = waitFor(g, obj, hasCondition(meta.StalledCondition, metav1.ConditionTrue, tt.wantReason))
				g.Expect(a.api.Issued() + a.api.Refused()).To(BeZero())
			default:
				got = waitFor(g, obj, hasCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, tt.wantReason))
				g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
				g.Expect(conditions.IsTrue(got, meta.StalledCondition)).To(BeFalse())
				g.Expect(a.api.Refused()).To(BeNumerically(">=", 1))
			}
			if tt.wantMsg != "" {
				g.Expect(conditions.Get(got, meta.ReadyCondition).Message).To(ContainSubstring(tt.wantMsg))
			}
			expectNoSecretIn(g, got, pemBody(pemKey))
		})
	}
}

func TestGitRepository_GitHubAppTokenCache(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name      string
		ttl       time.Duration
		wantFresh bool
	}{
		{name: "a token is reused across reconciles", ttl: time.Hour},
		{name: "a token near its expiry is renewed", ttl: 2 * time.Minute, wantFresh: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			a := newGitHubApp(t, "", tt.ttl)
			obj := createGitHubRepository(g, ns, strings.ReplaceAll(tt.name, " ", "-"), a, a.secret(a.pemKey))
			waitFor(g, obj, readyAt(""))
			first := a.api.LastToken()
			for _, req := range []string{"two", "three"} {
				requestReconcile(g, obj, req)
				waitFor(g, obj, func(o *sourcev1.GitRepository) bool {
					return o.Status.LastHandledReconcileAt == req && readyAt("")(o)
				})
			}
			// The git server takes only the last token handed out: each
			// reconcile was Ready with it.
			if tt.wantFresh {
				g.Expect(a.api.Issued()).To(BeNumerically(">=", 3))
				g.Expect(a.api.LastToken()).NotTo(Equal(first))
				return
			}
			g.Expect(a.api.Issued()).To(Equal(int64(1)))
		})
	}
}

func TestGitRepository_ProviderNotServed(t *testing.T) {
	ns := env.CreateNamespace(t)
	srv := gitserver.NewForTest(t)
	url := srv.MustStartHTTP(t) + "/r.git"
	srv.MustInitRepo(t, "r.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")
	tests := []struct {
		name     string
		provider string
		sa       string
		gated    bool // behind a gate that does not exist, which holds it
		wantMsg  string
	}{
		{name: "azure", provider: sourcev1.GitProviderAzure, wantMsg: "provider 'azure' is not served by Windlass"},
		{name: "aws", provider: sourcev1.GitProviderAWS, wantMsg: "provider 'aws' is not served by Windlass"},
		{name: "azure-service-account", provider: sourcev1.GitProviderAzure, sa: "deployer",
			wantMsg: "provider 'azure' with spec.serviceAccountName 'deployer' is not served by Windlass"},
		{name: "azure-behind-a-gate", provider: sourcev1.GitProviderAzure, gated: true,
			wantMsg: "provider 'azure' is not served by Windlass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			obj := newGitRepository(ns, tt.name, url)
			obj.Spec.Provider, obj.Spec.ServiceAccountName = tt.provider, tt.sa
			if tt.gated {
				obj.Spec.Gates = []meta.NamespacedObjectReference{{Name: "missing"}}
			}
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			got := waitFor(g, obj, hasCondition(meta.StalledCondition, metav1.ConditionTrue, meta.UnsupportedProviderReason))
			g.Expect(conditions.Get(got, meta.StalledCondition).Message).To(ContainSubstring(tt.wantMsg))
			g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
			g.Expect(srv.RequestsFor("r.git")).To(BeZero(), "nothing is cloned")
		})
	}
}
