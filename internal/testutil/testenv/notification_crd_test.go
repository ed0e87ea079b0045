package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
)

// createManifest creates the YAML manifest in ns and returns the object
// and the API server's answer.
func createManifest(g *WithT, ns, manifest string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(manifest), &u.Object)).To(Succeed())
	u.SetNamespace(ns)
	return u, env.Client.Create(context.Background(), u)
}

// TestNotificationManifestsApply applies Provider, Alert and Receiver
// manifests as the reference documentation writes them, v1beta2 and
// v1beta3 for Providers and Alerts, and reads them back in the stored
// form.
func TestNotificationManifestsApply(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name, manifest string
	}{
		{"v1beta3 slack provider", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: slack-bot}
spec:
  type: slack
  channel: general
  address: https://slack.com/api/chat.postMessage
  secretRef: {name: slack-bot-token}
`},
		{"v1beta3 github commit status provider", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: github-status}
spec:
  type: github
  address: https://github.com/my-gh-org/my-gh-repo
  secretRef: {name: github-app-auth}
  commitStatusExpr: "(event.involvedObject.kind + '/' + event.involvedObject.name + '/' + event.metadata.clusterName)"
`},
		{"v1beta3 generic provider with every field", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: generic-all}
spec:
  type: generic-hmac
  interval: 10m
  channel: ops
  username: flux
  address: https://my-webhook.internal
  timeout: 30s
  proxy: http://proxy.internal:3128
  proxySecretRef: {name: proxy}
  secretRef: {name: token}
  certSecretRef: {name: my-ca-crt}
  suspend: true
`},
		{"v1beta3 alert", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: slack}
spec:
  summary: "Cluster addons impacted in us-east-2"
  providerRef: {name: slack-bot}
  eventSeverity: error
  eventSources:
    - kind: GitRepository
      name: '*'
    - kind: Kustomization
      name: '*'
`},
		{"v1beta3 alert with filters and metadata", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: helm-successes}
spec:
  providerRef: {name: slack-bot}
  eventSources:
    - kind: HelmRelease
      name: '*'
      namespace: apps
      matchLabels: {team: app-dev}
  inclusionList: [".*succeeded.*"]
  exclusionList: [".*uninstall.*", ".*test.*"]
  eventMetadata: {env: production, cluster: my-cluster, region: us-east-1}
`},
		{"v1beta2 provider", `
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Provider
metadata: {name: slack-bot-v1beta2}
spec:
  type: slack
  channel: general
  address: https://slack.com/api/chat.postMessage
  secretRef: {name: slack-bot-token}
`},
		{"v1beta2 alert", `
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Alert
metadata: {name: slack-v1beta2}
spec:
  summary: "Flagger impacted in us-east-2"
  providerRef: {name: slack-bot-v1beta2}
  eventSeverity: error
  eventSources:
    - kind: HelmRepository
      name: '*'
    - kind: HelmRelease
      name: '*'
`},
		{"v1 github receiver", `
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: github-receiver}
spec:
  type: github
  events: ["ping", "push"]
  secretRef: {name: receiver-token}
  resources:
    - apiVersion: source.toolkit.fluxcd.io/v1
      kind: GitRepository
      name: flux-system
`},
		{"v1 receiver that closes a gate", `
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: freeze}
spec:
  type: generic-hmac
  secretRef: {name: webhook-token}
  resourceFilter: "req.action == 'freeze'"
  resources:
    - apiVersion: gating.toolkit.fluxcd.io/v1alpha1
      kind: Gate
      name: sre-approval
      action: close
    - kind: ImageRepository
      name: '*'
      matchLabels: {app: podinfo}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u, err := createManifest(g, ns, tt.manifest)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), u)).To(Succeed())
		})
	}

	ctx := context.Background()
	g := NewWithT(t)
	var alert notificationv1beta3.Alert
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "helm-successes"}, &alert)).To(Succeed())
	g.Expect(alert.Spec.EventSeverity).To(Equal(notificationv1beta3.EventSeverityInfo), "the default severity")
	g.Expect(alert.Spec.EventSources[0].MatchLabels).To(HaveKeyWithValue("team", "app-dev"))

	// A v1beta2 object is stored as v1beta3 with its spec whole.
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slack-v1beta2"}, &alert)).To(Succeed())
	g.Expect(alert.Spec.Summary).To(Equal("Flagger impacted in us-east-2"))
	g.Expect(alert.Spec.EventSources).To(HaveLen(2))
	var provider notificationv1beta3.Provider
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slack-bot-v1beta2"}, &provider)).To(Succeed())
	g.Expect(provider.Spec.Type).To(Equal(notificationv1beta3.ProviderTypeSlack))
	g.Expect(provider.GetTimeout()).To(Equal(15 * time.Second))

	// A v1beta3 field reads back through v1beta2 too: the schemas agree.
	old := &unstructured.Unstructured{}
	old.SetAPIVersion("notification.toolkit.fluxcd.io/v1beta2")
	old.SetKind("Provider")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "github-status"}, old)).To(Succeed())
	g.Expect(old.Object["spec"]).To(HaveKeyWithValue("commitStatusExpr", ContainSubstring("event.metadata.clusterName")))

	var receiver notificationv1.Receiver
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "freeze"}, &receiver)).To(Succeed())
	g.Expect(receiver.Spec.Interval.Duration).To(Equal(10*time.Minute), "the default interval")
	g.Expect(receiver.Status.ObservedGeneration).To(Equal(int64(-1)))
	g.Expect(receiver.Spec.Resources[0].GetAction()).To(Equal(notificationv1.GateActionClose))
	g.Expect(receiver.Spec.Resources[1].GetAction()).To(Equal(notificationv1.GateActionOpen))
}

// TestNotificationCRDValidation: the schema refuses what no controller
// could act on, and says which field is wrong.
func TestNotificationCRDValidation(t *testing.T) {
	ns := env.CreateNamespace(t)
	tests := []struct {
		name, manifest, wantErr string
	}{
		{"unknown provider type", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: bad-type}
spec: {type: smoke-signal}
`, `spec.type: Unsupported value: "smoke-signal"`},
		{"unknown provider type in v1beta2", `
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Provider
metadata: {name: bad-type-v1beta2}
spec: {type: carrier-pigeon}
`, `spec.type: Unsupported value: "carrier-pigeon"`},
		{"provider without type", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: no-type}
spec: {address: "https://example.com"}
`, `spec.type: Required value`},
		{"provider timeout that overflows", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: long-timeout}
spec: {type: generic, timeout: 9999999999h}
`, `spec.timeout`},
		{"provider proxy that is not a URL", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Provider
metadata: {name: bad-proxy}
spec: {type: generic, proxy: "proxy.internal:3128"}
`, `spec.proxy`},
		{"alert severity warn", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: severity-warn}
spec:
  providerRef: {name: p}
  eventSeverity: warn
  eventSources: [{kind: GitRepository, name: '*'}]
`, `spec.eventSeverity: Unsupported value: "warn"`},
		{"alert event source of a kind that sends no events", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: deployment-source}
spec:
  providerRef: {name: p}
  eventSources: [{kind: Deployment, name: web}]
`, `spec.eventSources[0].kind: Unsupported value: "Deployment"`},
		{"alert without provider", `
apiVersion: notification.toolkit.fluxcd.io/v1beta3
kind: Alert
metadata: {name: no-provider}
spec:
  eventSources: [{kind: GitRepository, name: '*'}]
`, `spec.providerRef: Required value`},
		{"alert summary too long", `
apiVersion: notification.toolkit.fluxcd.io/v1beta2
kind: Alert
metadata: {name: long-summary}
spec:
  providerRef: {name: p}
  summary: ` + strings.Repeat("x", 256) + `
  eventSources: [{kind: GitRepository, name: '*'}]
`, `spec.summary: Too long`},
		{"receiver without secretRef", `
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: no-secret}
spec:
  type: github
  resources: [{kind: GitRepository, name: webapp}]
`, `spec.secretRef: Required value`},
		{"receiver of an unknown type", `
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: oidc}
spec:
  type: generic-oidc
  secretRef: {name: token}
  resources: [{kind: GitRepository, name: webapp}]
`, `spec.type: Unsupported value: "generic-oidc"`},
		{"receiver action on a kind that is not a gate", `
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: action-not-gate}
spec:
  type: generic
  secretRef: {name: token}
  resources: [{kind: GitRepository, name: webapp, action: open}]
`, `action applies only to resources of kind Gate`},
		{"receiver gate action unknown", `
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: bad-action}
spec:
  type: generic
  secretRef: {name: token}
  resources: [{kind: Gate, name: approval, action: toggle}]
`, `spec.resources[0].action: Unsupported value: "toggle"`},
		{"receiver interval negative", `
apiVersion: notification.toolkit.fluxcd.io/v1
kind: Receiver
metadata: {name: negative-interval}
spec:
  type: generic
  interval: -1m
  secretRef: {name: token}
  resources: [{kind: GitRepository, name: webapp}]
`, `spec.interval`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := createManifest(g, ns, tt.manifest)
			t.Log(err)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
