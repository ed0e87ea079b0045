package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/scheme"
)

// defaultNamespace is where the toolkit's objects live unless -n says
// otherwise, as in the reference command line.
const defaultNamespace = "flux-system"

// kubeFlags are the flags that say which cluster, as whom and in which
// namespace a command works.
type kubeFlags struct {
	kubeconfig string
	context    string
	namespace  string
}

// bind adds the flags to cmd and its subcommands.
func (k *kubeFlags) bind(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "path to a kubeconfig; defaults to $KUBECONFIG, then ~/.kube/config")
	fs.StringVar(&k.context, "context", "", "the kubeconfig context to use")
	fs.StringVarP(&k.namespace, "namespace", "n", defaultNamespace, "the namespace of the objects")
}

// client returns a client of the cluster the flags name.
func (k *kubeFlags) client() (client.Client, error) {
	return k.watchClient()
}

// watchClient returns a client of the cluster the flags name that can also
// watch.
func (k *kubeFlags) watchClient() (client.WithWatch, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}

// restConfig returns the client configuration of the cluster the flags
// name: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, at --context.
func (k *kubeFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to: %w (set --kubeconfig or $KUBECONFIG)", err)
	}
	if cfg.QPS == 0 {
		// client-go's default, 5 requests a second, makes an install of a
		// few dozen objects wait on the client, not on the server.
		cfg.QPS, cfg.Burst = cliQPS, cliBurst
	}
	return cfg, nil
}

// The client-side rate limit of the CLI's requests.
const (
	cliQPS   = 50
	cliBurst = 100
)
