package versions

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestFailures: a failure ends the waits for the watches of its type
// description that started before it, not those that started after it
// nor those of another description.
func TestFailures(t *testing.T) {
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	tests := []struct {
		name   string
		events func(f *failures)
		gvk    schema.GroupVersionKind
		desc   string
		want   bool
	}{
		{"no failure", func(f *failures) { f.start(configMap) }, configMap, metadataDescription, false},
		{"failed after the start", func(f *failures) {
			f.start(configMap)
			f.record(metadataDescription)
		}, configMap, metadataDescription, true},
		{"failed before the start", func(f *failures) {
			f.record(metadataDescription)
			f.start(configMap)
		}, configMap, metadataDescription, false},
		{"another description failed", func(f *failures) {
			f.start(deployment)
			f.record(metadataDescription)
		}, deployment, deployment.String(), false},
		{"a second start keeps the first", func(f *failures) {
			f.start(configMap)
			f.record(metadataDescription)
			f.start(configMap)
		}, configMap, metadataDescription, true},
		{"never started", func(f *failures) { f.record(metadataDescription) }, configMap, metadataDescription, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &failures{}
			tt.events(f)
			NewWithT(t).Expect(f.since(tt.gvk, tt.desc)).To(Equal(tt.want))
		})
	}
}
