package generator

import (
	"fmt"
	"strings"

	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

// CheckSpec returns what makes spec unable ever to work, beyond what the
// API's schema checks: an alias or artifact name given twice, an alias
// that no source has, a pathPattern that does not parse.
func CheckSpec(spec sourceextv1beta1.ArtifactGeneratorSpec) error {
	aliases := map[string]bool{}
	for _, s := range spec.Sources {
		if aliases[s.Alias] {
			return fmt.Errorf("duplicate source alias '%s'", s.Alias)
		}
		aliases[s.Alias] = true
	}
	if spec.PathPattern != "" {
		pattern, err := ParsePattern(spec.PathPattern)
		if err != nil {
			return err
		}
		if !aliases[pattern.Alias] {
			return fmt.Errorf("pathPattern '%s' names the source alias '%s', which no source has", spec.PathPattern, pattern.Alias)
		}
	}
	names := map[string]bool{}
	for _, a := range spec.OutputArtifacts {
		if names[a.Name] {
			return fmt.Errorf("duplicate artifact name '%s'", a.Name)
		}
		names[a.Name] = true
		for _, ref := range []struct{ field, value string }{{"revision", a.Revision}, {"originRevision", a.OriginRevision}} {
			if alias := strings.TrimPrefix(ref.value, "@"); ref.value != "" && !aliases[alias] {
				return fmt.Errorf("artifact '%s': %s names the source alias '%s', which no source has", a.Name, ref.field, alias)
			}
		}
		for i, c := range a.Copy {
			alias, _, _ := strings.Cut(strings.TrimPrefix(c.From, "@"), "/")
			if !aliases[alias] && !strings.Contains(alias, "{") {
				return fmt.Errorf("artifact '%s': copy[%d] from '%s' names the source alias '%s', which no source has", a.Name, i, c.From, alias)
			}
		}
	}
	return nil
}
