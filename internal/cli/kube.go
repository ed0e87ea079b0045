package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/devenv"
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
	fs.StringVar(&k.kubeconfig, "kubeconfig", "", "path to a kubeconfig; defaults to $KUBECONFIG, then ~/.kube/config, then the one of the windlass dev that runs")
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
// name: --kubeconfig, else $KUBECONFIG, else ~/.kube/config, else the
// kubeconfig of the windlass dev that runs, at --context.
func (k *kubeFlags) restConfig() (*rest.Config, error) {
	cfg, err := k.load(k.kubeconfig)
	if clientcmd.IsEmptyConfig(err) && k.kubeconfig == "" {
		cfg, err = k.noKubeconfig()
	}
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		// client-go's default, 5 requests a second, makes an install of a
		// few dozen objects wait on the client, not on the server.
		cfg.QPS, cfg.Burst = cliQPS, cliBurst
	}
	return cfg, nil
}

// load loads the client configuration from the explicit path, or from
// the default places when it is empty.
func (k *kubeFlags) load(explicit string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicit
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if err != nil && !clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no cluster to talk to: %w (set --kubeconfig or $KUBECONFIG)", err)
	}
	return cfg, err
}

// noKubeconfig is what is left when no kubeconfig was found: the one of
// the windlass dev that runs when $KUBECONFIG is not set, or an error
// that says what is missing, rather than client-go's advice to set
// KUBERNETES_MASTER.
func (k *kubeFlags) noKubeconfig() (*rest.Config, error) {
	dev, running := devenv.Running()
	hint := "set --kubeconfig or $KUBECONFIG, or start a local cluster with windlass dev"
	if running {
		hint = fmt.Sprintf("windlass dev runs (pid %d): export KUBECONFIG=%s", dev.PID, dev.Kubeconfig)
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		return nil, fmt.Errorf("no cluster to talk to: %s: %s", kubeconfigEnvProblem(env), hint)
	}
	if running {
		return k.load(dev.Kubeconfig)
	}
	problem := "does not exist"
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
		problem = "holds no cluster"
	}
	return nil, fmt.Errorf("no cluster to talk to: $KUBECONFIG is not set and %s %s: %s",
		clientcmd.RecommendedHomeFile, problem, hint)
}

// kubeconfigEnvProblem says why the files $KUBECONFIG names (env) give no
// cluster: they do not exist, or they hold none.
func kubeconfigEnvProblem(env string) string {
	for _, path := range filepath.SplitList(env) {
		if _, err := os.Stat(path); err == nil {
			return fmt.Sprintf("the kubeconfig $KUBECONFIG names (%s) holds no cluster", env)
		}
	}
	return fmt.Sprintf("the file $KUBECONFIG names (%s) does not exist", env)
}

// devRun returns the record of the windlass dev that runs the cluster the
// flags name, if it is one: its controllers run in that process, not in
// the cluster.
func (k *kubeFlags) devRun(cfg *rest.Config) (devenv.Record, bool) {
	dev, running := devenv.Running()
	if !running {
		return devenv.Record{}, false
	}
	devCfg, err := clientcmd.BuildConfigFromFlags("", dev.Kubeconfig)
	if err != nil || devCfg.Host != cfg.Host {
		return devenv.Record{}, false
	}
	return dev, true
}

// The client-side rate limit of the CLI's requests.
const (
	cliQPS   = 50
	cliBurst = 100
)
