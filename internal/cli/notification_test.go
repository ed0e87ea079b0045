package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// TestNotificationCreateExport prints the Providers, Alerts and Receivers
// that create makes with --export, and compares them with their golden
// files.
func TestNotificationCreateExport(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{golden: "notification-create-provider", args: []string{"create", "alert-provider", "slack", "--type", "slack",
			"--channel", "ops", "--username", "windlass", "--secret-ref", "slack-url", "--timeout", "30s", "--label", "team=ops"}},
		{golden: "notification-create-provider-commit-status", args: []string{"create", "alert-provider", "github-status", "-n", "apps",
			"--type", "github", "--address", "https://github.com/org/app", "--secret-ref", "github-token", "--cert-secret-ref", "github-ca",
			"--proxy-secret-ref", "proxy"}},
		{golden: "notification-create-alert", args: []string{"create", "alert", "prod-failures", "--provider-ref", "oncall",
			"--event-severity", "error", "--event-source", "kustomization/*", "--event-source", "GitRepository/infra/fleet",
			"--exclusion-list", ".*no changes.*", "--event-metadata", "env=prod,cluster=eu-1"}},
		{golden: "notification-create-receiver", args: []string{"create", "receiver", "github", "--type", "github",
			"--event", "push", "--resource", "GitRepository/app,Gate/prod-window:close", "--resource", "Kustomization/*",
			"--secret-ref", "webhook-token", "--resource-filter", "req.ref == 'refs/heads/main'"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, err := runWithInput(t, "", true, tt.args...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errOut).To(BeEmpty())
			expectGolden(t, g, tt.golden, out)
		})
	}
}

// TestNotificationCreateBadFlags checks that wrong flags are refused in
// one line that names the flag, before anything reaches the cluster, and
// that no error echoes a secret.
func TestNotificationCreateBadFlags(t *testing.T) {
	ns := env.CreateNamespace(t)
	provider := []string{"create", "alert-provider", "oncall", "-n", ns}
	alert := []string{"create", "alert", "failures", "-n", ns}
	withProvider := slices.Clip(append(slices.Clone(alert), "--provider-ref", "oncall"))
	rcv := []string{"create", "receiver", "github", "-n", ns}
	withType := slices.Clip(append(slices.Clone(rcv), "--type", "github", "--secret-ref", "token"))
	tests := []refusedFlags{
		{"provider: no type", append(provider, "--address", "https://x.example.com"), `--type "" is not a provider type Windlass sends to`},
		{"provider: a type not served", append(provider, "--type", "azureeventhub", "--address", "https://x.example.com"), `--type "azureeventhub" is not a provider type`},
		{"provider: nats over http", append(provider, "--type", "nats", "--address", "https://nats.example.com"), "--address must be a nats or tls URL, like nats://host:4222"},
		{"provider: a comment without a token", append(provider, "--type", "githubpullrequestcomment", "--address", "https://github.com/org/app"), "a githubpullrequestcomment provider needs --secret-ref"},
		{"provider: no address", append(provider, "--type", "generic"), "give the service's address: --address, or --secret-ref"},
		{"provider: an address that is no URL", append(provider, "--type", "generic", "--address", "hooks.example.com"), "--address must be an http or https URL"},
		{"provider: an address with a password", append(provider, "--type", "generic", "--address", "https://bot:s3cr3t@hooks.example.com"), "--address must not carry a password"},
		{"provider: a commit status without a token", append(provider, "--type", "gitlab", "--address", "https://gitlab.com/org/app"), "a gitlab provider needs --secret-ref"},
		{"provider: a bad secret name", append(provider, "--type", "slack", "--secret-ref", "Slack_URL"), `--secret-ref "Slack_URL" is not an object name`},
		{"provider: a negative timeout", append(provider, "--type", "slack", "--secret-ref", "slack", "--timeout=-1s"), "--timeout must be a positive duration"},
		{"alert: no provider", append(alert, "--event-source", "Kustomization/app"), "--provider-ref is required"},
		{"alert: no source", withProvider, "--event-source is required"},
		{"alert: a source without a kind", append(withProvider, "--event-source", "app"), `--event-source "app" is not Kind/[NAMESPACE/]NAME`},
		{"alert: a kind that sends no events", append(withProvider, "--event-source", "Gate/prod"), `--event-source kind "Gate" is not one of`},
		{"provider: azureeventhub, not served", append(provider, "--type", "azureeventhub", "--address", "https://x.example.com"), `--type "azureeventhub" is not a provider type`},
		{"provider: googlepubsub, not served", append(provider, "--type", "googlepubsub", "--address", "https://x.example.com"), `--type "googlepubsub" is not a provider type`},
		{"alert: a bad namespace", append(withProvider, "--event-source", "Kustomization/Apps/app"), `"Apps" is not a namespace name`},
		{"alert: another severity", append(withProvider, "--event-source", "Kustomization/app", "--event-severity", "warning"), `--event-severity "warning": choose info or error`},
		{"alert: a regex that is none", append(withProvider, "--event-source", "Kustomization/app", "--inclusion-list", "(upgrade"), `--inclusion-list "(upgrade" is not a Go regular expression`},
		{"alert: metadata without a value", append(withProvider, "--event-source", "Kustomization/app", "--event-metadata", "env"), `--event-metadata "env" is not key=value`},
		{"receiver: a type not served", append(rcv, "--type", "gcr", "--secret-ref", "token", "--resource", "GitRepository/app"), `--type "gcr" is not a receiver type Windlass serves`},
		{"receiver: no secret", append(rcv, "--type", "github", "--resource", "GitRepository/app"), "--secret-ref is required"},
		{"receiver: no resource", withType, "--resource is required"},
		{"receiver: an action on a source", append(withType, "--resource", "GitRepository/app:open"), "only a Gate takes an action"},
		{"receiver: another action", append(withType, "--resource", "Gate/prod:approve"), `the action "approve" is not open or close`},
		{"receiver: a Gate opened unsigned", append(withType, "--resource", "Gate/prod"), "a Gate is opened only by a Receiver of --type generic-hmac"},
		{"receiver: a kind nothing reconciles", append(withType, "--resource", "ExternalArtifact/app"), `--resource kind "ExternalArtifact" is not one of`},
		{"receiver: a bad name", append(withType, "--resource", "GitRepository/App"), `--resource "App" is not an object name`},
	}
	expectRefused(t, tests)
	t.Run("nothing reached the cluster", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		var providers notificationv1beta3.ProviderList
		g.Expect(env.Client.List(ctx, &providers, client.InNamespace(ns))).To(Succeed())
		g.Expect(providers.Items).To(BeEmpty())
		var alerts notificationv1beta3.AlertList
		g.Expect(env.Client.List(ctx, &alerts, client.InNamespace(ns))).To(Succeed())
		g.Expect(alerts.Items).To(BeEmpty())
		var receivers notificationv1.ReceiverList
		g.Expect(env.Client.List(ctx, &receivers, client.InNamespace(ns))).To(Succeed())
		g.Expect(receivers.Items).To(BeEmpty())
	})
}

// TestNotificationCreateAgainstTheCluster applies what create makes to the
// real API server: a Provider and an Alert, which no controller reports
// on, are checked for the objects they name; a Receiver is reconciled by
// the real Receiver controller, and its webhook path printed.
func TestNotificationCreateAgainstTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)

	out, _, err := run(t, "create", "alert-provider", "oncall", "-n", ns, "--type", "generic-hmac",
		"--address", "https://hooks.example.com/notify", "--secret-ref", "hmac-key")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✚ Provider " + ns + "/oncall applied\n" +
		"⚠ Secret " + ns + "/hmac-key does not exist yet: nothing is sent until it does\n"))
	var provider notificationv1beta3.Provider
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oncall"}, &provider)).To(Succeed())
	g.Expect(provider.Spec.Type).To(Equal(notificationv1beta3.ProviderTypeGenericHMAC))
	g.Expect(provider.ManagedFields).To(ContainElement(HaveField("Manager", fieldOwner)))

	out, _, err = run(t, "create", "alert", "failures", "-n", ns, "--provider-ref", "oncall", "--event-severity", "error",
		"--event-source", "Kustomization/*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✚ Alert " + ns + "/failures applied\n"))
	out, _, err = run(t, "create", "alert", "releases", "-n", ns, "--provider-ref", "slack", "--event-source", "HelmRelease/frontend")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveSuffix("⚠ Provider " + ns + "/slack does not exist yet: nothing is sent until it does\n"))

	const token = "r3ceiver-t0ken"
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-token"},
		StringData: map[string]string{notificationv1.TokenKey: token}})).To(Succeed())
	out, _, err = run(t, "create", "receiver", "github", "-n", ns, "--type", "github", "--event", "push",
		"--resource", "GitRepository/app", "--secret-ref", "webhook-token", "--label", controlledLabel+"=true", "--timeout", "30s")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("✔ Receiver " + ns + "/github reconciled: Receiver initialized for path: " +
		webhook.WebhookPath(token, "github", ns) + "\n"))
	g.Expect(out).NotTo(ContainSubstring(token))
}

// seedNotificationObjects creates, in a new namespace, two Providers (one
// suspended, one with its address in a Secret), an Alert on each, and a
// Ready Receiver that no controller reconciles.
func seedNotificationObjects(t *testing.T, g *WithT) string {
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	for _, obj := range []client.Object{
		&notificationv1beta3.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "oncall"},
			Spec: notificationv1beta3.ProviderSpec{Type: "pagerduty", Address: "https://events.pagerduty.com/v2/enqueue?key=x",
				SecretRef: &meta.LocalObjectReference{Name: "pd"}}},
		&notificationv1beta3.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
			Spec: notificationv1beta3.ProviderSpec{Type: "slack", Channel: "frontend", SecretRef: &meta.LocalObjectReference{Name: "slack-url"}, Suspend: true}},
		&notificationv1beta3.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "failures"},
			Spec: notificationv1beta3.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "oncall"}, EventSeverity: "error",
				EventSources: []notificationv1beta3.EventSource{{Kind: "Kustomization", Name: "*"}, {Kind: "GitRepository", Name: "fleet", Namespace: "infra"}}}},
		&notificationv1beta3.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "releases"},
			Spec: notificationv1beta3.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "slack"},
				EventSources: []notificationv1beta3.EventSource{{Kind: "HelmRelease", Name: "frontend", Namespace: ns}}}},
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}
	rcv := &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "github"},
		Spec: notificationv1.ReceiverSpec{Type: "github", SecretRef: meta.LocalObjectReference{Name: "webhook-token"},
			Resources: []notificationv1.ResourceReference{{Kind: "GitRepository", Name: "app"}}}}
	createWithStatus(g, rcv, func() {
		rcv.Status.WebhookPath = "/hook/" + strings.Repeat("ab", 32)
		rcv.Status.ObservedGeneration = rcv.Generation
		conditions.MarkTrue(rcv, meta.ReadyCondition, meta.SucceededReason, "Receiver initialized for path: %s", rcv.Status.WebhookPath)
	})
	return ns
}

// TestNotificationGetKinds lists Providers, Alerts and Receivers; `get
// all` shows the Receiver but leaves out the kinds without status.
func TestNotificationGetKinds(t *testing.T) {
	g := NewWithT(t)
	ns := seedNotificationObjects(t, g)
	tests := []struct {
		args   []string
		golden string
	}{
		{args: []string{"get", "alert-providers"}, golden: "notification-get-providers"},
		{args: []string{"get", "providers"}, golden: "notification-get-providers"},
		{args: []string{"get", "alerts"}, golden: "notification-get-alerts"},
		{args: []string{"get", "receivers"}, golden: "notification-get-receivers"},
		{args: []string{"get", "all"}, golden: "notification-get-all"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, _, err := run(t, append(tt.args, "-n", ns)...)
			g.Expect(err).NotTo(HaveOccurred())
			expectGolden(t, g, tt.golden, out)
			g.Expect(out).NotTo(ContainSubstring("key=x"), "the address beyond its host may be a credential")
		})
	}
}

// TestNotificationVerbs drives Alerts, Providers and Receivers through
// suspend, resume, export and delete against the real API server; the
// kinds without status have nothing to reconcile, so resume does not wait
// and reconcile does not offer them.
func TestNotificationVerbs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := seedNotificationObjects(t, g)
	key := client.ObjectKey{Namespace: ns, Name: "failures"}
	var alert notificationv1beta3.Alert

	out, _, err := run(t, "suspend", "alert", "failures", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Alert " + ns + "/failures suspended\n"))
	g.Expect(env.Client.Get(ctx, key, &alert)).To(Succeed())
	g.Expect(alert.Spec.Suspend).To(BeTrue())

	out, _, err = run(t, "resume", "alert", "failures", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Alert " + ns + "/failures resumed\n"))
	g.Expect(env.Client.Get(ctx, key, &alert)).To(Succeed())
	g.Expect(alert.Spec.Suspend).To(BeFalse())

	out, _, err = run(t, "resume", "alert-provider", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Provider " + ns + "/oncall resumed\n✔ Provider " + ns + "/slack resumed\n"))

	_, _, err = run(t, "reconcile", "alert", "failures", "-n", ns)
	g.Expect(err).To(HaveOccurred(), "an Alert has nothing to reconcile")

	out, _, err = run(t, "suspend", "receiver", "github", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Receiver " + ns + "/github suspended\n"))

	out, _, err = run(t, "export", "alert", "--all", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	expectGolden(t, g, "notification-export-alerts", strings.ReplaceAll(out, ns, "NS"))

	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "releases"}, &alert)).To(Succeed())
	recordEvent(g, &alert, notificationv1beta3.GroupVersion.String(), notificationv1beta3.AlertKind, corev1.EventTypeWarning,
		"ProviderNotFound", "Provider 'slack' not found", time.Minute)
	out, _, err = run(t, "events", "--for", "Alert/releases", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("ProviderNotFound"))
	g.Expect(out).To(ContainSubstring("Provider 'slack' not found"))

	out, _, err = run(t, "delete", "alert", "releases", "-n", ns, "--silent")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveSuffix("✔ Alert " + ns + "/releases deleted\n"))
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "releases"}, &notificationv1beta3.Alert{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}

// TestTriggerReceiver sends Receivers, reconciled by the real controller,
// requests signed with their Secret's token to the real webhook server:
// the GitRepository a GitHub Receiver names is asked to reconcile, a
// GitLab Receiver takes a payload from a file; a Receiver that is not
// Ready, suspended or unknown to the server is refused with the reason.
func TestTriggerReceiver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	const token = "tr1gger-t0ken"
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "webhook-token"},
		StringData: map[string]string{notificationv1.TokenKey: token}})).To(Succeed())
	// Labelled, so that the webhook server (which reads objects through the
	// tests' cache, made of the labelled ones only) sees it; nothing serves
	// its URL, so its controller fails fast.
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app", Labels: map[string]string{controlledLabel: "true"}},
		Spec: sourcev1.GitRepositorySpec{URL: "http://127.0.0.1:1/app.git", Interval: metav1.Duration{Duration: time.Hour}}}
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	label := "--label=" + controlledLabel + "=true"
	for _, args := range [][]string{
		{"github", "--type", "github", "--event", "push"},
		{"gitlab", "--type", "gitlab", "--event", "Tag Push Hook"},
	} {
		_, _, err := run(t, append([]string{"create", "receiver", "-n", ns, "--resource", "GitRepository/app",
			"--secret-ref", "webhook-token", label, "--timeout", "30s"}, args...)...)
		g.Expect(err).NotTo(HaveOccurred())
	}

	out, _, err := run(t, "trigger", "receiver", "github", "-n", ns, "--address", receiverAddr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Receiver " + ns + "/github accepted the github request (200 OK)\n"))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		g.Expect(repo.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	first := repo.Annotations[meta.ReconcileRequestAnnotation]

	payload := filepath.Join(t.TempDir(), "tag-push.json")
	g.Expect(os.WriteFile(payload, []byte(`{"object_kind":"tag_push","ref":"refs/tags/v1.0.0"}`), 0o600)).To(Succeed())
	out, _, err = run(t, "trigger", "receiver", "gitlab", "-n", ns, "--address", receiverAddr+"/", "--payload", payload)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ Receiver " + ns + "/gitlab accepted the gitlab request (200 OK)\n"))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		g.Expect(repo.Annotations[meta.ReconcileRequestAnnotation]).NotTo(Equal(first))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

	t.Run("refused", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run(t, "create", "receiver", "no-token", "-n", ns, "--type", "generic", "--resource", "GitRepository/app",
			"--secret-ref", "missing", label, "--timeout", "1s")
		g.Expect(err).To(HaveOccurred())
		_, _, err = run(t, "trigger", "receiver", "no-token", "-n", ns, "--address", receiverAddr)
		g.Expect(err).To(MatchError(ContainSubstring("Receiver " + ns + "/no-token is not Ready, so it serves no webhook")))

		stale := seedNotificationObjects(t, g) // a Ready Receiver the server does not know
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: stale, Name: "webhook-token"},
			StringData: map[string]string{notificationv1.TokenKey: token}})).To(Succeed())
		_, _, err = run(t, "trigger", "receiver", "github", "-n", stale, "--address", receiverAddr)
		g.Expect(err).To(MatchError(ContainSubstring("the webhook of Receiver " + stale + "/github answered 404 Not Found")))
		g.Expect(err.Error()).NotTo(ContainSubstring(token))

		_, _, err = run(t, "trigger", "receiver", "github", "-n", ns, "--address", "localhost:9292")
		g.Expect(err).To(MatchError(ContainSubstring(`--address "localhost:9292" must be an http or https URL`)))

		_, _, err = run(t, "suspend", "receiver", "github", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		_, _, err = run(t, "trigger", "receiver", "github", "-n", ns, "--address", receiverAddr)
		g.Expect(err).To(MatchError(ContainSubstring("is suspended, so its webhook answers nothing")))
	})
}

// The types create alert-provider offers are those the notifiers serve:
// the newer ones too, and not the two the API accepts that Windlass does
// not serve.
func TestServedProviderTypes(t *testing.T) {
	g := NewWithT(t)
	served := servedProviderTypes()
	for _, typ := range []string{"generic", "slack", "pagerduty", "github", "azuredevops", "githubdispatch",
		notificationv1beta3.ProviderTypeZoom, notificationv1beta3.ProviderTypeIncidentIO, notificationv1beta3.ProviderTypeNATS,
		notificationv1beta3.ProviderTypeOTel, notificationv1beta3.ProviderTypeGitHubPullRequestComment,
		notificationv1beta3.ProviderTypeGitLabMergeRequestComment, notificationv1beta3.ProviderTypeGiteaPullRequestComment} {
		g.Expect(served).To(ContainElement(typ))
	}
	g.Expect(served).NotTo(ContainElements(notificationv1beta3.ProviderTypeAzureEventHub, notificationv1beta3.ProviderTypeGooglePubSub))
}

// An event source or a Receiver's resource is written as the other kind
// references are (Kind/NAME, Kind/NAMESPACE/NAME, Kind/NAME.NAMESPACE), and
// may name '*', which a single reference may not.
func TestParseKindSelector(t *testing.T) {
	g := NewWithT(t)
	kinds := []string{"Kustomization", "GitRepository"}
	for value, want := range map[string]kindRef{
		"kustomization/*":         {kind: "Kustomization", name: "*"},
		"Kustomization/app.prod":  {kind: "Kustomization", namespace: "prod", name: "app"},
		"GitRepository/infra/*":   {kind: "GitRepository", namespace: "infra", name: "*"},
		"GitRepository/infra/app": {kind: "GitRepository", namespace: "infra", name: "app"},
	} {
		got, err := parseKindSelector("--event-source", value, kinds)
		g.Expect(err).NotTo(HaveOccurred(), value)
		g.Expect(got).To(Equal(want), value)
	}
	_, err := parseKindRef("--source", "Kustomization/*", kinds, true)
	g.Expect(err).To(MatchError(ContainSubstring(`"*" is not an object name`)))
	_, err = parseKindSelector("--event-source", "Kustomization/Bad_Name", kinds)
	g.Expect(err).To(MatchError(ContainSubstring(`"Bad_Name" is not an object name`)))
}
