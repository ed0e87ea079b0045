package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"github.com/windlass-dev/windlass/internal/githubapp"
)

// githubAppSecretFlags are the flags of `create secret githubapp`.
type githubAppSecretFlags struct {
	appID, installationID, privateKeyFile, baseURL string
}

func newCreateSecretGitHubAppCommand(f *createFlags) *cobra.Command {
	s := &githubAppSecretFlags{}
	cmd := &cobra.Command{
		Use:   "githubapp NAME",
		Short: "Create or update the Secret of a GitHub App, for a GitRepository with provider github",
		Long: `Create or update a Secret with a GitHub App's credentials, which a GitRepository
with spec.provider github names in spec.secretRef: githubAppID,
githubAppInstallationID, githubAppPrivateKey (the app's PEM key) and, for
GitHub Enterprise Server, githubAppBaseURL (its API, like
https://github.example.com/api/v3). The controller exchanges them for
installation tokens.

The Secret is printed only with --export, its data in base64.`,
		Example: `  windlass create secret githubapp github-app --app-id 123456 --app-installation-id 7890123 \
    --app-private-key-file ./my-app.private-key.pem
  windlass create secret githubapp ghe-app --app-id 12 --app-installation-id 34 \
    --app-private-key-file ./app.pem --app-base-url https://github.example.com/api/v3 --export > ghe-app.yaml`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			obj, err := s.object(args[0], f)
			if err != nil {
				return err
			}
			return f.apply(cmd, obj, false)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&s.appID, "app-id", "", "the GitHub App's ID (or client ID)")
	fs.StringVar(&s.installationID, "app-installation-id", "", "the ID of the app's installation that can read the repository")
	fs.StringVar(&s.privateKeyFile, "app-private-key-file", "", "the app's private key, the PEM file GitHub hands out")
	fs.StringVar(&s.baseURL, "app-base-url", "", "the API base URL of a GitHub Enterprise Server (default: api.github.com)")
	return cmd
}

// object returns the Secret the flags declare, or the first flag that is
// wrong; the keys are checked as the controller checks them. No error
// holds the private key.
func (s *githubAppSecretFlags) object(name string, f *createFlags) (*corev1.Secret, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	if s.privateKeyFile == "" {
		return nil, fmt.Errorf("--app-private-key-file is required: the GitHub App's PEM private key")
	}
	key, err := os.ReadFile(s.privateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--app-private-key-file: %w", err)
	}
	data := map[string][]byte{githubapp.KeyAppID: []byte(s.appID), githubapp.KeyInstallationID: []byte(s.installationID),
		githubapp.KeyPrivateKey: key}
	if s.baseURL != "" {
		data[githubapp.KeyBaseURL] = []byte(s.baseURL)
	}
	if _, err := githubapp.FromSecret(data); err != nil {
		return nil, fmt.Errorf("invalid GitHub App (flags --app-id, --app-installation-id, --app-private-key-file, --app-base-url): %w", err)
	}
	return &corev1.Secret{ObjectMeta: om, Data: data}, nil
}
