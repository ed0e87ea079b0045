package sandbox

import (
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Literal returns a copy of ch, dependencies included, whose templates
// print the files that Render returned for them and do nothing else:
// rendering it costs no more than copying them. Partials, and the
// templates of subcharts that were not rendered, become empty. Nothing of
// ch is changed.
func Literal(ch *chart.Chart, rendered map[string]string) *chart.Chart {
	if ch == nil {
		return nil
	}
	out := *ch
	out.Templates = make([]*common.File, len(ch.Templates))
	for i, t := range ch.Templates {
		if t == nil {
			continue
		}
		lit := *t
		lit.Data = []byte(literalTemplate(rendered[path.Join(ch.ChartFullPath(), t.Name)]))
		out.Templates[i] = &lit
	}
	deps := make([]*chart.Chart, 0, len(ch.Dependencies()))
	for _, dep := range ch.Dependencies() {
		deps = append(deps, Literal(dep, rendered))
	}
	out.SetDependencies(deps...)
	return &out
}

// literalTemplate returns a template that prints text: the only action
// that text could hold starts with "{{", so each one is printed by an
// action of its own.
func literalTemplate(text string) string {
	return strings.ReplaceAll(text, "{{", `{{"{{"}}`)
}
