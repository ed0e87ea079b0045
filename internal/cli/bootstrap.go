package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/bootstrap"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/install"
)

// bootstrapFlags are the flags of `bootstrap git`.
type bootstrapFlags struct {
	verbFlags
	secret                  gitSecretFlags
	branch, path            string
	interval                time.Duration
	install                 install.Options
	authorName, authorEmail string
}

func newBootstrapCommand() *cobra.Command {
	f := &bootstrapFlags{}
	cmd := &cobra.Command{Use: "bootstrap", Short: "Make Windlass manage itself from a Git repository"}
	f.bindWaiting(cmd)
	git := &cobra.Command{
		Use:   "git",
		Short: "Commit Windlass and its sync to a Git repository, apply them, and wait until the cluster follows it",
		Long: `Write the install manifests and a sync (a GitRepository of the repository and a
Kustomization of --path) to PATH/flux-system/ in the repository, commit and
push them when they changed, apply them to the cluster with the credentials
in a Secret, and wait until the Kustomization is Ready at that commit. From
then on Windlass keeps the cluster, itself included, equal to --path. Run it
again to upgrade: it commits only what changed.`,
		Example: `  windlass bootstrap git --url https://git.example.com/fleet.git -u bot -p "$TOKEN" --path clusters/prod
  windlass bootstrap git --url ssh://git@git.example.com/fleet.git --private-key-file ./id_ed25519 --path clusters/prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.secret.readPasswordStdin(cmd.InOrStdin()); err != nil {
				return err
			}
			if err := f.check(); err != nil {
				return err
			}
			data, err := f.secretData(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
				return f.bootstrap(ctx, c, w, data)
			})
		},
	}
	fs := git.Flags()
	fs.StringVar(&f.secret.url, "url", "", "the repository: https (with --username/--password) or ssh (with --private-key-file)")
	fs.StringVar(&f.branch, "branch", "main", "the branch to commit to and follow")
	fs.StringVar(&f.path, "path", "", "the cluster's folder in the repository, e.g. clusters/prod")
	fs.DurationVar(&f.interval, "interval", time.Minute, "how often the repository is checked and applied")
	fs.StringVarP(&f.secret.username, "username", "u", "", "the user name, for https")
	fs.StringVarP(&f.secret.password, "password", "p", "", "the password or token for https; the private key's passphrase for ssh")
	fs.StringVar(&f.secret.privateKeyFile, "private-key-file", "", "the SSH private key, for ssh")
	fs.StringVar(&f.secret.knownHostsFile, "known-hosts-file", "", "the known_hosts of the SSH server (default: scanned from the URL's host)")
	fs.StringVar(&f.secret.caFile, "ca-file", "", "a PEM bundle of the CAs to trust, for https")
	f.secret.bindPasswordStdin(fs)
	fs.StringSliceVar(&f.install.Components, "components", nil, "the controllers to install (default all)")
	fs.StringVar(&f.install.Registry, "registry", install.DefaultRegistry, "the registry of the windlass image")
	fs.StringVar(&f.install.Version, "version", "", "the image tag (default: this client's version)")
	fs.BoolVar(&f.install.NetworkPolicy, "network-policy", true, "install the NetworkPolicy of the namespace")
	fs.StringVar(&f.authorName, "author-name", "Windlass", "the author of the commit")
	fs.StringVar(&f.authorEmail, "author-email", "windlass@users.noreply.invalid", "the author's email")
	cmd.AddCommand(git)
	return cmd
}

// bootstrap pushes, applies and waits, with the credentials in data (the
// keys of the Secret it creates).
func (f *bootstrapFlags) bootstrap(ctx context.Context, c client.Client, w io.Writer, data map[string][]byte) error {
	auth, err := git.Credentials(f.secret.url, data)
	if err != nil {
		return fmt.Errorf("the credentials of --url: %w", err)
	}
	f.install.Namespace = f.kube.namespace
	if f.install.Version == "" {
		f.install.Version = install.DefaultVersion(Version)
	}
	manifests, err := install.Render(f.install)
	if err != nil {
		return err
	}
	components, err := manifests.YAML()
	if err != nil {
		return err
	}
	sync := bootstrap.Sync{URL: f.secret.url, Branch: f.branch, Path: f.path, Namespace: f.kube.namespace, Interval: f.interval}
	if len(data) > 0 {
		sync.SecretRef = bootstrap.SyncName
	}
	files, err := bootstrap.Files(sync, components)
	if err != nil {
		return err
	}
	sha, pushed, err := bootstrap.Push(ctx, f.secret.url, f.branch, auth, files,
		bootstrap.Commit{AuthorName: f.authorName, AuthorEmail: f.authorEmail, Message: "Add Windlass " + manifests.Options.Version})
	if err != nil {
		return fmt.Errorf("%w (check --url and the credentials)", err)
	}
	if pushed {
		fmt.Fprintf(w, "✔ committed and pushed %s to %s/%s\n", short(sha), f.branch, path.Join(f.path, bootstrap.SyncName))
	} else {
		fmt.Fprintf(w, "✔ %s/%s is up to date at %s\n", f.branch, path.Join(f.path, bootstrap.SyncName), short(sha))
	}
	if _, err := install.Apply(ctx, c, manifests, f.timeout); err != nil {
		return err
	}
	fmt.Fprintf(w, "✔ applied the components to namespace %s\n", f.kube.namespace)
	if err := f.applySync(ctx, c, sync, data); err != nil {
		return err
	}
	ks := sync.Objects()[1].(*kustomizev1.Kustomization)
	return f.waitOutcome(ctx, c, w, kustomizationKind(), ks, func(o reconcilable) bool {
		return strings.HasSuffix(o.(*kustomizev1.Kustomization).Status.LastAttemptedRevision, sha)
	})
}

// check validates the flags before anything is sent.
func (f *bootstrapFlags) check() error {
	clean := path.Clean(f.path)
	switch {
	case f.secret.url == "":
		return errors.New("--url is required: the repository to commit to")
	case f.path == "" || path.IsAbs(f.path) || clean == ".." || strings.HasPrefix(clean, "../"):
		return fmt.Errorf("--path %q must be a folder inside the repository, e.g. clusters/prod", f.path)
	case f.branch == "":
		return errors.New("--branch must not be empty")
	case f.interval <= 0:
		return errors.New("--interval must be a positive duration")
	}
	return nil
}

// secretData returns the keys of the credentials Secret the flags give,
// as `create secret git` writes them; none for a public https URL.
func (f *bootstrapFlags) secretData(ctx context.Context, errOut io.Writer) (map[string][]byte, error) {
	u, err := parseGitURL(f.secret.url)
	if err != nil {
		return nil, err
	}
	var values map[string]string
	if u.Scheme == "ssh" {
		values, err = f.secret.sshData(ctx, errOut, u)
	} else {
		values, err = f.secret.httpData(errOut, u)
	}
	if err != nil {
		return nil, err
	}
	data := make(map[string][]byte, len(values))
	for k, v := range values {
		data[k] = []byte(v)
	}
	return data, nil
}

// applySync applies the credentials Secret (when there are credentials),
// the GitRepository and the Kustomization, as the field owner of the
// command line.
func (f *bootstrapFlags) applySync(ctx context.Context, c client.Client, sync bootstrap.Sync, data map[string][]byte) error {
	objs := sync.Objects()
	if len(data) > 0 {
		secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: bootstrap.SyncName, Namespace: sync.Namespace}, Data: data}
		objs = append([]client.Object{secret}, objs...)
	}
	for _, obj := range objs {
		manifest, err := cleanManifest(obj)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(manifest), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// kustomizationKind returns the Kustomization entry of objectKinds.
func kustomizationKind() objectKind { return kindNamed(kustomizev1.KustomizationKind) }

// short returns the first 12 characters of a commit hash.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
