package ssa

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/inventory"
)

func TestChangeSet(t *testing.T) {
	deploy := inventory.ObjMetadata{Namespace: "default", Name: "app", Group: "apps", Kind: "Deployment"}
	ns := inventory.ObjMetadata{Name: "team", Kind: "Namespace"}
	cm := inventory.ObjMetadata{Namespace: "default", Name: "cfg", Kind: "ConfigMap"}
	old := inventory.ObjMetadata{Namespace: "default", Name: "old", Kind: "Secret"}
	tests := []struct {
		name      string
		entries   []Change
		str       string
		summary   string
		changed   bool
		inventory []inventory.Entry
	}{
		{name: "empty", entries: nil, str: "", summary: "", changed: false, inventory: []inventory.Entry{}},
		{
			name: "mixed",
			entries: []Change{
				{Object: ns, Version: "v1", Action: ActionCreated},
				{Object: deploy, Version: "v1", Action: ActionConfigured},
				{Object: cm, Version: "v1", Action: ActionUnchanged},
				{Object: old, Version: "v1", Action: ActionDeleted},
			},
			str:     "Namespace/team created\nDeployment/default/app configured\nConfigMap/default/cfg unchanged\nSecret/default/old deleted",
			summary: "Namespace/team created\nDeployment/default/app configured\nSecret/default/old deleted",
			changed: true,
			inventory: []inventory.Entry{
				{ID: "_team__Namespace", Version: "v1"},
				{ID: "default_app_apps_Deployment", Version: "v1"},
				{ID: "default_cfg__ConfigMap", Version: "v1"},
			},
		},
		{
			name:      "nothing changed",
			entries:   []Change{{Object: cm, Version: "v1", Action: ActionUnchanged}, {Object: deploy, Version: "v1", Action: ActionSkipped}},
			str:       "ConfigMap/default/cfg unchanged\nDeployment/default/app skipped",
			summary:   "",
			changed:   false,
			inventory: []inventory.Entry{{ID: "default_app_apps_Deployment", Version: "v1"}, {ID: "default_cfg__ConfigMap", Version: "v1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cs := &ChangeSet{Entries: tt.entries}
			g.Expect(cs.String()).To(Equal(tt.str))
			g.Expect(cs.Summary()).To(Equal(tt.summary))
			g.Expect(cs.Changed()).To(Equal(tt.changed))
			g.Expect(cs.Inventory()).To(Equal(tt.inventory))
		})
	}
}

func TestChangeSetAppend(t *testing.T) {
	g := NewWithT(t)
	a := &ChangeSet{}
	a.add(inventory.ObjMetadata{Name: "a", Kind: "Namespace"}, "v1", ActionCreated)
	b := &ChangeSet{}
	b.add(inventory.ObjMetadata{Name: "b", Kind: "Namespace"}, "v1", ActionDeleted)
	a.Append(b)
	a.Append(nil)
	g.Expect(a.String()).To(Equal("Namespace/a created\nNamespace/b deleted"))
	var nilSet *ChangeSet
	g.Expect(nilSet.String()).To(BeEmpty())
}
