package cli

import (
	"github.com/spf13/cobra"

	"github.com/windlass-dev/windlass/internal/monitoring"
)

func newMonitoringCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:         "monitoring",
		Annotations: map[string]string{subcommandsAnnotation: subcommandsAreCommands},
		Short:       "Print the alert rules, the Grafana dashboard and the scrape configuration",
		Long: `Print what Prometheus and Grafana need to watch Windlass, as plain files for a
Prometheus without the Prometheus Operator (with the operator, windlass install
--monitoring applies them as a PodMonitor, a PrometheusRule and a ConfigMap
that Grafana's dashboard sidecar loads). docs/operations.md lists the metrics,
the panels and the alerts with their runbooks.`,
		Example: `  windlass monitoring rules > windlass-rules.yaml
  windlass monitoring dashboard > windlass-dashboard.json
  windlass monitoring scrape-config -n flux-system`,
	}
	rules := &cobra.Command{
		Use:   "rules",
		Short: "Print the alert rules, as a Prometheus rule file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := monitoring.RuleFile(monitoring.DefaultRuleOptions)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	dashboard := &cobra.Command{
		Use:   "dashboard",
		Short: "Print the Grafana dashboard, as JSON to import",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := monitoring.Dashboard()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(data, '\n'))
			return err
		},
	}
	var namespace string
	scrape := &cobra.Command{
		Use:   "scrape-config",
		Short: "Print a Prometheus scrape job that finds the controllers' pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := monitoring.ScrapeConfig(namespace)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	scrape.Flags().StringVarP(&namespace, "namespace", "n", defaultNamespace, "the namespace Windlass is installed in")
	cmd.AddCommand(rules, dashboard, scrape)
	return cmd
}
