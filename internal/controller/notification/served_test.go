package notification

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestUnservedValuesAreRefusedAtAdmission: Provider and Alert have no
// status to stall, so the values Windlass does not serve are refused by
// the API server, on both served versions, with a message naming the
// value; a served value is accepted.
func TestUnservedValuesAreRefusedAtAdmission(t *testing.T) {
	ns := env.CreateNamespace(t)
	provider := func(typ string) map[string]any {
		return map[string]any{"type": typ, "address": "https://hooks.example.com/x"}
	}
	alert := func(kind string) map[string]any {
		return map[string]any{"providerRef": map[string]any{"name": "p"},
			"eventSources": []any{map[string]any{"kind": "Kustomization", "name": "*"}, map[string]any{"kind": kind, "name": "*"}}}
	}
	withServiceAccount := func(spec map[string]any, name string) map[string]any {
		spec["serviceAccountName"] = name
		return spec
	}
	for _, version := range []string{"v1beta3", "v1beta2"} {
		for i, tc := range []struct {
			kind, message string
			spec          map[string]any
			since         string // the first version with the field
		}{
			{kind: "Provider", spec: provider("slack")},
			{kind: "Provider", spec: provider("azureeventhub"), message: "provider type azureeventhub is not served by Windlass"},
			{kind: "Provider", spec: provider("googlepubsub"), message: "provider type googlepubsub is not served by Windlass"},
			{kind: "Provider", spec: withServiceAccount(provider("azuredevops"), "ci"),
				message: "spec.serviceAccountName ci is not served by Windlass", since: "v1beta3"},
			{kind: "Alert", spec: alert("GitRepository")},
			{kind: "Alert", spec: alert("ExternalArtifact")},
			{kind: "Alert", spec: alert("ArtifactGenerator")},
		} {
			if tc.since != "" && version < tc.since {
				continue
			}
			t.Run(fmt.Sprintf("%s %s %v", version, tc.kind, tc.spec), func(t *testing.T) {
				g := NewWithT(t)
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "notification.toolkit.fluxcd.io/" + version, "kind": tc.kind,
					"metadata": map[string]any{"namespace": ns, "name": fmt.Sprintf("%s-%d", version, i)},
					"spec":     tc.spec,
				}}
				err := env.Client.Create(context.Background(), u)
				if tc.message == "" {
					g.Expect(err).NotTo(HaveOccurred())
					return
				}
				g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tc.message))
			})
		}
	}
}
