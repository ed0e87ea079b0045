package monitoring

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// DashboardUID is the dashboard's uid in Grafana: the same across
// installs, so that links to it keep working.
const DashboardUID = "windlass-overview"

// datasource is every panel's data source: the dashboard's $datasource
// variable, a Prometheus.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// Dashboard returns the Grafana dashboard of Rows, as JSON.
func Dashboard() ([]byte, error) {
	b := dashboard.NewDashboardBuilder("Windlass").
		Uid(DashboardUID).
		Description("Windlass's objects, sources, appliers, Helm, notifications, images, gates and control plane.").
		Tags([]string{"windlass", "gitops"}).
		Refresh("30s").
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("namespace").
			Label("Namespace").
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(gotk_resource_info, exported_namespace)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Multi(true).IncludeAll(true).AllValue(".*"))
	id := uint32(0)
	for _, row := range Rows() {
		id++
		b = b.WithRow(dashboard.NewRowBuilder(row.Title).Id(id))
		for _, p := range row.Panels {
			id++
			b = b.WithPanel(panelBuilder(id, p))
		}
	}
	d, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("building the dashboard: %w", err)
	}
	return json.MarshalIndent(d, "", "  ")
}

// panelBuilder returns the builder of p's visualization, with its id.
func panelBuilder(id uint32, p Panel) cog.Builder[dashboard.Panel] {
	switch p.Type {
	case "stat":
		b := stat.NewPanelBuilder().Id(id).Title(p.Title).Description(p.Description).Unit(p.Unit).Datasource(datasource).Span(6).Height(4).
			ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
		for _, q := range p.Queries {
			b = b.WithTarget(target(q))
		}
		return b
	case "table":
		b := table.NewPanelBuilder().Id(id).Title(p.Title).Description(p.Description).Unit(p.Unit).Datasource(datasource).Span(12).Height(8)
		for _, q := range p.Queries {
			b = b.WithTarget(target(q))
		}
		if len(p.Queries) > 1 {
			// One row per object, the queries' values side by side.
			b = b.WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}})
		}
		return b
	}
	b := timeseries.NewPanelBuilder().Id(id).Title(p.Title).Description(p.Description).Unit(p.Unit).Datasource(datasource).Span(12).Height(8)
	for _, q := range p.Queries {
		b = b.WithTarget(target(q))
	}
	return b
}

// target returns the Prometheus query of q.
func target(q Query) *prometheus.DataqueryBuilder {
	t := prometheus.NewDataqueryBuilder().Expr(q.Expr).Datasource(datasource)
	if q.Legend != "" {
		t = t.LegendFormat(q.Legend)
	}
	if q.Instant {
		t = t.Instant().Format(prometheus.PromQueryFormatTable)
	}
	return t
}
