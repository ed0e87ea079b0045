package imageupdate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// referenceTemplate is the example message template of the reference
// documentation.
const referenceTemplate = `Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
`

// changedTree applies testRefs to a small tree and returns the result.
func changedTree(t *testing.T) *Result {
	t.Helper()
	root := writeTree(t, map[string]string{
		"apps/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: podinfo, namespace: apps}
spec:
  image: ghcr.io/org/app:1.0.0 # {"$imagepolicy": "apps:podinfo"}
  sidecar: ghcr.io/org/pinned:1.0.0 # {"$imagepolicy": "apps:pinned"}
`,
		"values.yaml": "tag: 1.0.0 # {\"$imagepolicy\": \"apps:podinfo:tag\"}\n",
	})
	res, err := ApplySetters(root, ".", testRefs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRenderMessageReferenceTemplate(t *testing.T) {
	g := NewWithT(t)
	msg, err := RenderMessage(referenceTemplate, TemplateData{
		AutomationObject: types.NamespacedName{Namespace: "flux-system", Name: "auto"},
		Changed:          changedTree(t),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg).To(Equal(`Automated image update

Automation name: flux-system/auto

Files:
- apps/deploy.yaml
- values.yaml
Objects:
-  
  Changes:
    - 1.0.0 -> 1.0.1
- Deployment podinfo
  Changes:
    - ghcr.io/org/app:1.0.0 -> ghcr.io/org/app:1.0.1

    - ghcr.io/org/pinned:1.0.0 -> ghcr.io/org/pinned:2.0.0@` + testDigest + `
`))
}

func TestRenderMessageDefault(t *testing.T) {
	g := NewWithT(t)
	for _, tmpl := range []string{"", " \n\t"} {
		msg, err := RenderMessage(tmpl, TemplateData{Changed: changedTree(t)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(msg).To(Equal(`Update images

- apps/deploy.yaml: ghcr.io/org/app:1.0.0 -> ghcr.io/org/app:1.0.1
- apps/deploy.yaml: ghcr.io/org/pinned:1.0.0 -> ghcr.io/org/pinned:2.0.0@` + testDigest + `
- values.yaml: 1.0.0 -> 1.0.1
`))
	}
	msg, err := RenderMessage("", TemplateData{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg).To(Equal("Update images\n"))
}

func TestRenderMessageData(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl, want string
	}{
		{"values", "{{ .Values.env }}/{{ .Values.team }}", "prod/web"},
		{"a value named Updated is no removed field", "{{ .Values.Updated }}", "yes"},
		{"automation object fields", "{{ .AutomationObject.Namespace }} {{ .AutomationObject.Name }}", "flux-system auto"},
		{"nil result", "{{ len .Changed.FileChanges }} {{ len .Changed.Changes }} {{ .Changed.Empty }}", "0 0 true"},
		{"policies", "{{ range .Changed.Policies }}{{ . }} {{ end }}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			msg, err := RenderMessage(tc.tmpl, TemplateData{
				AutomationObject: types.NamespacedName{Namespace: "flux-system", Name: "auto"},
				Values:           map[string]string{"env": "prod", "team": "web", "Updated": "yes"},
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(msg).To(Equal(tc.want))
		})
	}
}

func TestRenderMessageRemovedField(t *testing.T) {
	for _, tmpl := range []string{
		"{{ .Updated }}",
		"Files: {{ range $f, $_ := .Updated.Files }}{{ $f }}{{ end }}",
		"{{ if .Changed }}{{ else }}{{ .Updated.Images }}{{ end }}",
		"{{ with .Changed }}{{ .Updated }}{{ end }}",
		"{{ $x := . }}{{ $x.Updated }}",
		"{{ $.Updated }}",
		"{{ (.Changed).Updated }}",
		"{{ printf \"%v\" .Updated }}",
		"{{ len .Changed.FileChanges | printf \"%d %v\" .Updated }}",
		"{{ define \"x\" }}{{ .Updated }}{{ end }}hello",
		"{{ template \"y\" .Updated }}{{ define \"y\" }}{{ . }}{{ end }}",
	} {
		t.Run(tmpl, func(t *testing.T) {
			g := NewWithT(t)
			_, err := RenderMessage(tmpl, TemplateData{Changed: changedTree(t)})
			g.Expect(errors.Is(err, ErrRemovedTemplateField)).To(BeTrue(), "error: %v", err)
			_, err = ParseMessageTemplate(tmpl)
			g.Expect(errors.Is(err, ErrRemovedTemplateField)).To(BeTrue())
		})
	}
}

func TestRenderMessageErrors(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl, err string
	}{
		{"unclosed action", "{{ .Changed.FileChanges ", "parsing the commit message template"},
		{"unknown function", "{{ nope }}", "parsing the commit message template"},
		{"unknown field", "{{ .Nope }}", "rendering the commit message template"},
		{"bad method arguments", "{{ .Changed.Empty 1 }}", "rendering the commit message template"},
		{"error about a huge value", "{{ range .Values.big }}{{ end }}", "rendering the commit message template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := RenderMessage(tc.tmpl, TemplateData{Values: map[string]string{"big": strings.Repeat("v", 1<<20)}})
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
			g.Expect(len(err.Error())).To(BeNumerically("<", 1100), "an error stays short")
			g.Expect(errors.Is(err, ErrRemovedTemplateField)).To(BeFalse())
		})
	}
}

func TestRenderMessageIsCapped(t *testing.T) {
	g := NewWithT(t)
	big := strings.Repeat("€", MaxMessageBytes) // 3 bytes each
	msg, err := RenderMessage("start {{ .Values.big }}{{ .Values.big }} end", TemplateData{Values: map[string]string{"big": big}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(msg)).To(BeNumerically("<=", MaxMessageBytes))
	g.Expect(len(msg)).To(BeNumerically(">", MaxMessageBytes-utf8.UTFMax))
	g.Expect(utf8.ValidString(msg)).To(BeTrue(), "no character is split")
	g.Expect(msg).To(HavePrefix("start €€€"))

	many := map[string]string{}
	for i := range 300 {
		many[fmt.Sprint(i)] = "v"
	}
	msg, err = RenderMessage(`{{ range .Values }}{{ range $.Values }}x{{ end }}{{ end }}`, TemplateData{Values: many})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg).To(Equal(strings.Repeat("x", MaxMessageBytes)), "a quadratic template stops at the cap")
}
