package cli

import (
	"bytes"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/githubapp"
	"github.com/windlass-dev/windlass/internal/testutil/githubapi"
)

func TestCreateSecretGitHubApp(t *testing.T) {
	_, pemKey := githubapi.NewKey(t)
	keyFile := writeTestFile(t, NewWithT(t), "app.pem", pemKey)
	notAKey := writeTestFile(t, NewWithT(t), "not.pem", []byte("s3cr3t-not-a-key"))
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		wantBase string
	}{
		{name: "github.com", args: []string{"--app-id", "123", "--app-installation-id", "456", "--app-private-key-file", keyFile}},
		{name: "enterprise", args: []string{"--app-id", "123", "--app-installation-id", "456", "--app-private-key-file", keyFile,
			"--app-base-url", "https://ghe.example.com/api/v3"}, wantBase: "https://ghe.example.com/api/v3"},
		{name: "no installation", args: []string{"--app-id", "123", "--app-private-key-file", keyFile}, wantErr: "'githubAppInstallationID' is missing"},
		{name: "no key file", args: []string{"--app-id", "123", "--app-installation-id", "456"}, wantErr: "--app-private-key-file is required"},
		{name: "not a key", args: []string{"--app-id", "123", "--app-installation-id", "456", "--app-private-key-file", notAKey},
			wantErr: "'githubAppPrivateKey' is not a PEM RSA private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var out, errOut bytes.Buffer
			root := NewRootCommand(&out, &errOut)
			root.SetArgs(append(append([]string{"create", "secret", "githubapp", "app"}, tt.args...),
				"--export", "--kubeconfig", filepath.Join(t.TempDir(), "missing")))
			err := root.Execute()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error() + errOut.String()).NotTo(ContainSubstring("s3cr3t"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var s corev1.Secret
			g.Expect(yaml.Unmarshal(out.Bytes(), &s)).To(Succeed())
			g.Expect(s.Data).To(HaveKeyWithValue(githubapp.KeyAppID, []byte("123")))
			g.Expect(s.Data).To(HaveKeyWithValue(githubapp.KeyInstallationID, []byte("456")))
			g.Expect(s.Data).To(HaveKeyWithValue(githubapp.KeyPrivateKey, pemKey))
			if tt.wantBase == "" {
				g.Expect(s.Data).NotTo(HaveKey(githubapp.KeyBaseURL))
			} else {
				g.Expect(s.Data).To(HaveKeyWithValue(githubapp.KeyBaseURL, []byte(tt.wantBase)))
			}
		})
	}
}
