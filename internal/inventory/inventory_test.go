package inventory

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func TestObjMetadataID(t *testing.T) {
	tests := []struct {
		name    string
		obj     ObjMetadata
		id      string
		subject string
	}{
		{
			name:    "namespaced core object",
			obj:     ObjMetadata{Namespace: "default", Name: "app", Kind: "ConfigMap"},
			id:      "default_app__ConfigMap",
			subject: "ConfigMap/default/app",
		},
		{
			name:    "namespaced object in a group",
			obj:     ObjMetadata{Namespace: "apps", Name: "web", Group: "apps", Kind: "Deployment"},
			id:      "apps_web_apps_Deployment",
			subject: "Deployment/apps/web",
		},
		{
			name:    "cluster-scoped object with a dotted group",
			obj:     ObjMetadata{Name: "widgets.example.com", Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
			id:      "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition",
			subject: "CustomResourceDefinition/widgets.example.com",
		},
		{
			name:    "cluster-scoped core object",
			obj:     ObjMetadata{Name: "team-a", Kind: "Namespace"},
			id:      "_team-a__Namespace",
			subject: "Namespace/team-a",
		},
		{
			name:    "name with underscores",
			obj:     ObjMetadata{Name: "my_cluster_role", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
			id:      "_my_cluster_role_rbac.authorization.k8s.io_ClusterRole",
			subject: "ClusterRole/my_cluster_role",
		},
		{
			name:    "name with colons",
			obj:     ObjMetadata{Name: "system:aggregate-to-view", Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
			id:      "_system__aggregate-to-view_rbac.authorization.k8s.io_ClusterRole",
			subject: "ClusterRole/system:aggregate-to-view",
		},
		{
			name:    "name with underscores and colons",
			obj:     ObjMetadata{Namespace: "ns", Name: "a_b:c_d", Group: "rbac.authorization.k8s.io", Kind: "Role"},
			id:      "ns_a_b__c_d_rbac.authorization.k8s.io_Role",
			subject: "Role/ns/a_b:c_d",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.obj.ID()).To(Equal(tt.id))
			g.Expect(tt.obj.String()).To(Equal(tt.id))
			g.Expect(tt.obj.Subject()).To(Equal(tt.subject))
			parsed, err := ParseObjMetadata(tt.id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(parsed).To(Equal(tt.obj))
		})
	}
}

func TestParseObjMetadata(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		want    ObjMetadata
		wantErr string
	}{
		{name: "core namespaced", id: "default_app__Secret", want: ObjMetadata{Namespace: "default", Name: "app", Kind: "Secret"}},
		{name: "underscores in the name", id: "ns_a_b_c_apps_Deployment", want: ObjMetadata{Namespace: "ns", Name: "a_b_c", Group: "apps", Kind: "Deployment"}},
		{name: "empty", id: "", wantErr: "want <namespace>_<name>_<group>_<kind>"},
		{name: "too few parts", id: "ns_name_Kind", wantErr: "want <namespace>_<name>_<group>_<kind>"},
		{name: "one separator", id: "ns_name", wantErr: "want <namespace>_<name>_<group>_<kind>"},
		{name: "empty name", id: "ns___Kind", wantErr: "must not be empty"},
		{name: "empty kind", id: "ns_name_apps_", wantErr: "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseObjMetadata(tt.id)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestEntryGroupVersionKind(t *testing.T) {
	tests := []struct {
		name    string
		entry   Entry
		want    schema.GroupVersionKind
		wantErr bool
	}{
		{name: "core", entry: Entry{ID: "ns_a__ConfigMap", Version: "v1"}, want: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}},
		{name: "grouped", entry: Entry{ID: "ns_a_apps_Deployment", Version: "v1"}, want: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
		{name: "malformed", entry: Entry{ID: "nope", Version: "v1"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := tt.entry.GroupVersionKind()
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestFromObjects(t *testing.T) {
	tests := []struct {
		name string
		objs []*unstructured.Unstructured
		want []Entry
	}{
		{name: "none", objs: nil, want: []Entry{}},
		{
			name: "sorted by ID",
			objs: []*unstructured.Unstructured{
				object("apps/v1", "Deployment", "b", "web"),
				object("v1", "Namespace", "", "b"),
				object("v1", "ConfigMap", "a", "cfg"),
			},
			want: []Entry{
				{ID: "_b__Namespace", Version: "v1"},
				{ID: "a_cfg__ConfigMap", Version: "v1"},
				{ID: "b_web_apps_Deployment", Version: "v1"},
			},
		},
		{
			name: "duplicates keep the first version",
			objs: []*unstructured.Unstructured{
				object("example.com/v2", "Widget", "ns", "w"),
				object("example.com/v1", "Widget", "ns", "w"),
			},
			want: []Entry{{ID: "ns_w_example.com_Widget", Version: "v2"}},
		},
		{
			name: "names with underscores and colons",
			objs: []*unstructured.Unstructured{
				object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "system:my_role"),
			},
			want: []Entry{{ID: "_system__my_role_rbac.authorization.k8s.io_ClusterRole", Version: "v1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(FromObjects(tt.objs)).To(Equal(tt.want))
		})
	}
}

func TestDiff(t *testing.T) {
	a := Entry{ID: "ns_a__ConfigMap", Version: "v1"}
	b := Entry{ID: "ns_b__ConfigMap", Version: "v1"}
	c := Entry{ID: "ns_c_example.com_Widget", Version: "v1"}
	cNew := Entry{ID: "ns_c_example.com_Widget", Version: "v2"}
	tests := []struct {
		name     string
		old, new []Entry
		want     []Entry
	}{
		{name: "nothing old", old: nil, new: []Entry{a}, want: nil},
		{name: "nothing new prunes all", old: []Entry{a, b}, new: nil, want: []Entry{a, b}},
		{name: "removed object is stale", old: []Entry{a, b, c}, new: []Entry{a, c}, want: []Entry{b}},
		{name: "version change is not stale", old: []Entry{c}, new: []Entry{cNew}, want: nil},
		{name: "identical", old: []Entry{a, b}, new: []Entry{b, a}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Diff(tt.old, tt.new)).To(Equal(tt.want))
		})
	}
}

func TestMerge(t *testing.T) {
	a := Entry{ID: "ns_a__ConfigMap", Version: "v1"}
	b := Entry{ID: "ns_b__ConfigMap", Version: "v1"}
	cOld := Entry{ID: "ns_c_example.com_Widget", Version: "v1"}
	cNew := Entry{ID: "ns_c_example.com_Widget", Version: "v2"}
	tests := []struct {
		name        string
		base, extra []Entry
		want        []Entry
	}{
		{name: "both empty", want: []Entry{}},
		{name: "union sorted", base: []Entry{b}, extra: []Entry{a}, want: []Entry{a, b}},
		{name: "base version wins", base: []Entry{cNew}, extra: []Entry{cOld, a}, want: []Entry{a, cNew}},
		{name: "duplicates within base", base: []Entry{a, a}, want: []Entry{a}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Merge(tt.base, tt.extra)).To(Equal(tt.want))
		})
	}
}
