package testenv

// WidgetCRD returns the manifest of a namespaced CustomResourceDefinition
// of kind Widget in group, version v1, whose spec has a size (an integer)
// and a color (a string): a custom kind for tests of applying, pruning and
// checking the health of custom resources. Give each test its own group.
func WidgetCRD(group string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.` + group + `
spec:
  group: ` + group + `
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
`
}
