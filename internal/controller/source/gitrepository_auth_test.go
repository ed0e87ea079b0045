package source

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// createSecret creates a Secret with data in ns.
func createSecret(g *WithT, ns, name string, data map[string][]byte) *meta.LocalObjectReference {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
	g.Expect(env.Client.Create(context.Background(), s)).To(Succeed())
	return &meta.LocalObjectReference{Name: name}
}

// expectNoSecretIn asserts that secret appears in no condition, no event
// of obj and no log line.
func expectNoSecretIn(g *WithT, obj *sourcev1.GitRepository, secret string) {
	g.Expect(logs.String()).NotTo(ContainSubstring(secret), "logs")
	for _, c := range obj.Status.Conditions {
		g.Expect(c.Message).NotTo(ContainSubstring(secret), "condition "+c.Type)
	}
	for _, e := range testutil.EventMessages(g, env.Client, obj, "") {
		g.Expect(e).NotTo(ContainSubstring(secret))
	}
}

func TestGitRepository_Authentication(t *testing.T) {
	const password, token = "pa55-w0rd-xyz", "t0ken-abc-123"
	ns := env.CreateNamespace(t)

	basic := gitserver.NewForTest(t)
	basic.SetBasicAuth("git", password)
	basicURL := basic.MustStartHTTP(t)
	basic.MustInitRepo(t, "r.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")

	bearer := gitserver.NewForTest(t)
	bearer.SetBearerToken(token)
	bearerURL := bearer.MustStartHTTP(t)
	bearer.MustInitRepo(t, "r.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")

	tlsServer := gitserver.NewForTest(t)
	tlsURL := tlsServer.MustStartHTTPS(t, gitserver.TLSOptions{})
	tlsServer.MustInitRepo(t, "r.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")

	mtls := gitserver.NewForTest(t)
	mtlsURL := mtls.MustStartHTTPS(t, gitserver.TLSOptions{RequireClientCert: true})
	mtls.MustInitRepo(t, "r.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")
	certPEM, keyPEM := mtls.ClientCert()

	sshServer := gitserver.NewForTest(t)
	sshURL := sshServer.MustStartSSH(t)
	_, identity := sshServer.AuthorizedSSHKeyForTest(t)
	sshServer.MustInitRepo(t, "r.git", "main").MustCommit(t, "main", map[string]string{"a": "1"}, "one")

	tests := []struct {
		name       string
		url        string
		secret     map[string][]byte
		wantReady  bool
		wantReason string
		stalled    bool
		hidden     string
	}{
		{name: "basic auth", url: basicURL + "/r.git", wantReady: true,
			secret: map[string][]byte{"username": []byte("git"), "password": []byte(password)}},
		{name: "wrong password", url: basicURL + "/r.git", wantReason: sourcev1.AuthenticationFailedReason, hidden: "wrong-" + password,
			secret: map[string][]byte{"username": []byte("git"), "password": []byte("wrong-" + password)}},
		{name: "no credentials", url: basicURL + "/r.git", wantReason: sourcev1.AuthenticationFailedReason},
		{name: "credentials in the url", url: strings.Replace(basicURL, "http://", "http://git:"+password+"@", 1) + "/r.git", wantReady: true, hidden: password},
		{name: "bearer token", url: bearerURL + "/r.git", wantReady: true,
			secret: map[string][]byte{"bearerToken": []byte(token)}},
		{name: "https with ca", url: tlsURL + "/r.git", wantReady: true,
			secret: map[string][]byte{"ca.crt": tlsServer.CACert()}},
		{name: "https without ca", url: tlsURL + "/r.git", wantReason: sourcev1.AuthenticationFailedReason},
		{name: "client certificate", url: mtlsURL + "/r.git", wantReady: true,
			secret: map[string][]byte{"ca.crt": mtls.CACert(), "tls.crt": certPEM, "tls.key": keyPEM}},
		{name: "ssh", url: sshURL + "/r.git", wantReady: true,
			secret: map[string][]byte{"identity": identity, "known_hosts": sshServer.KnownHosts()}},
		{name: "ssh unknown host key", url: sshURL + "/r.git", wantReason: sourcev1.AuthenticationFailedReason,
			secret: map[string][]byte{"identity": identity, "known_hosts": otherHostKey(t)}},
		{name: "credentials with spaces and quotes in an invalid url", url: strings.Replace(basicURL, "http://", "http://git:s3cr3t pa\"ss<w>@", 1) + "/r.git",
			wantReason: sourcev1.URLInvalidReason, stalled: true, hidden: "s3cr3t pa"},
		{name: "a password with a slash in an invalid url", url: strings.Replace(basicURL, "http://", "http://git:ab/cd-s3cr3t@", 1) + "/r.git",
			wantReason: sourcev1.URLInvalidReason, stalled: true, hidden: "cd-s3cr3t"},
		{name: "ssh without known hosts", url: sshURL + "/r.git", wantReason: sourcev1.AuthenticationFailedReason, stalled: true,
			secret: map[string][]byte{"identity": identity}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			name := strings.ReplaceAll(tt.name, " ", "-")
			obj := newGitRepository(ns, name, tt.url)
			obj.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: "main"}
			if tt.secret != nil {
				obj.Spec.SecretRef = createSecret(g, ns, name, tt.secret)
			}
			g.Expect(env.Client.Create(context.Background(), obj)).To(Succeed())
			var got *sourcev1.GitRepository
			switch {
			case tt.wantReady:
				got = waitFor(g, obj, readyAt(""))
			case tt.stalled:
				got = waitFor(g, obj, hasCondition(meta.StalledCondition, metav1.ConditionTrue, tt.wantReason))
			default:
				got = waitFor(g, obj, hasCondition(sourcev1.FetchFailedCondition, metav1.ConditionTrue, tt.wantReason))
				g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue())
				g.Expect(got.Status.Artifact).To(BeNil())
			}
			if tt.hidden != "" {
				expectNoSecretIn(g, got, tt.hidden)
			}
		})
	}
}

// otherHostKey returns a known_hosts file that trusts another server's host
// key, not the test server's.
func otherHostKey(t *testing.T) []byte {
	other := gitserver.NewForTest(t)
	other.MustStartSSH(t)
	return other.KnownHosts()
}
