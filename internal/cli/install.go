package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/windlass-dev/windlass/internal/install"
	"github.com/windlass-dev/windlass/internal/manager"
)

// installFlags are the flags of `windlass install`.
type installFlags struct {
	kube          kubeFlags
	export        bool
	components    []string
	registry      string
	version       string
	networkPolicy bool
	split         bool
	replicas      int
	ui            bool
	monitoring    bool
	timeout       time.Duration
	force         bool
}

func newInstallCommand() *cobra.Command {
	f := &installFlags{}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install Windlass into a cluster, or print its manifests",
		Long: `Install the Windlass CRDs and controllers into the cluster: the namespace, a
service account and its RBAC, a Deployment that runs the controllers (or one
per controller with --split), the source-controller Service that serves the
artifacts, the image-reflector-controller Service that serves the scanned
image tags, the webhook-receiver Service and a NetworkPolicy. The objects are applied with server-side apply
(field manager "windlass"), the CRDs first; then install waits until the
Deployments are Available. Running it again updates what changed and nothing
else. --monitoring adds, for the Prometheus Operator and Grafana, a PodMonitor
of the controllers, a PrometheusRule of the alerts and the dashboard (see
windlass monitoring for the same as plain files). --export prints the
manifests instead, and needs no cluster.`,
		Example: `  windlass install
  windlass install --export > windlass.yaml
  windlass install --monitoring
  windlass install --components source --registry registry.example.com/mirror --version v0.1.0
  windlass install -n gitops --split --network-policy=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	f.kube.bind(cmd)
	fs := cmd.Flags()
	fs.BoolVar(&f.export, "export", false, "print the manifests as YAML instead of applying them (needs no cluster)")
	fs.StringSliceVar(&f.components, "components", manager.AllControllers, "the controllers to install, comma-separated")
	fs.StringVar(&f.registry, "registry", install.DefaultRegistry, "the registry and path of the windlass image")
	fs.StringVar(&f.version, "version", "", "the image tag (default: this client's version, or latest for a development build)")
	fs.BoolVar(&f.networkPolicy, "network-policy", true, "let only the pods of the namespace reach the controllers' artifact and image tags ports")
	fs.BoolVar(&f.split, "split", false, "run one Deployment per controller rather than one for all")
	fs.IntVar(&f.replicas, "replicas", 1, "pods per Deployment: with more than one, they share the objects (controller --shards=auto), each reconciling its share, and take over a lost pod's share within the lease duration")
	fs.BoolVar(&f.ui, "ui", false, "serve the web UI behind the Service windlass-ui, signing users in with a Kubernetes token, and grant the controllers the token reviews, access reviews and impersonation that sign-in needs")
	fs.BoolVar(&f.monitoring, "monitoring", false, "add a PodMonitor of the controllers, a PrometheusRule of the alerts and the Grafana dashboard in a ConfigMap (label grafana_dashboard) for the Prometheus Operator and Grafana's sidecar")
	fs.BoolVar(&f.force, "force", false, "install even into the cluster of windlass dev, whose controllers run in windlass dev")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long to wait for the CRDs and for the Deployments to be Available")
	return cmd
}

// options returns the rendering options of the flags.
func (f *installFlags) options() install.Options {
	version := f.version
	if version == "" {
		version = install.DefaultVersion(Version)
	}
	return install.Options{
		Components: f.components, Registry: f.registry, Version: version, Namespace: f.kube.namespace,
		NetworkPolicy: f.networkPolicy, Split: f.split, UI: f.ui, Monitoring: f.monitoring, Replicas: f.replicas,
	}
}

func (f *installFlags) run(cmd *cobra.Command) error {
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	m, err := install.Render(f.options())
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if f.export {
		data, err := m.YAML()
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	if err := f.refuseDev(); err != nil {
		return err
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	if f.monitoring {
		if err := install.RequireMonitoringAPI(c.RESTMapper()); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	ns := m.Options.Namespace
	fmt.Fprintf(w, "► installing Windlass %s (%s) in namespace %s\n", m.Options.Version, strings.Join(m.Options.Components, ", "), ns)
	cs, err := install.Apply(ctx, c, m, f.timeout)
	if cs != nil {
		for _, change := range cs.Entries {
			fmt.Fprintf(w, "✔ %s\n", change)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "◎ waiting for the Deployments to be Available: %s\n", strings.Join(m.DeploymentNames(), ", "))
	err = install.WaitAvailable(ctx, c, ns, m.DeploymentNames(), f.timeout, func(name string) {
		fmt.Fprintf(w, "✔ Deployment %s/%s Available\n", ns, name)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "✔ Windlass %s installed in %s\n", m.Options.Version, ns)
	return nil
}

// refuseDev refuses to install into the cluster of windlass dev, unless
// forced: its controllers already run in windlass dev, and it has no
// scheduler or kubelet to run a Deployment.
func (f *installFlags) refuseDev() error {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return err
	}
	if dev, ok := f.kube.devRun(cfg); ok && !f.force {
		return fmt.Errorf("this is the cluster of windlass dev (pid %d): its controllers already run in windlass dev, "+
			"and it has no scheduler or kubelet to run them in a Deployment; nothing to install (--force installs anyway)", dev.PID)
	}
	return nil
}
