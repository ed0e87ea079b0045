package notification

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // Nexus signs with HMAC-SHA1
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/webhook"
)

// hookService is one Receiver type and a request as its service sends it:
// the payload of the service's webhook documentation (shortened), with the
// headers the service adds, signed or carrying the token the way the
// service does.
type hookService struct {
	typ string
	// events is the Receiver's spec.events.
	events []string
	// body is the payload.
	body string
	// headers returns the headers the service sends with body, for the
	// Receiver's token.
	headers func(token string, body []byte) map[string]string
	// authHeader carries the signature or the token; empty for the types
	// that the secret path alone authenticates.
	authHeader string
	// handled is the event message of the request, after "handled ".
	handled string
	// wrongShape is a well-formed JSON body that is not of the service's
	// shape; empty for the types that accept any body.
	wrongShape string
	// other returns a request, as authentic, for an event not in
	// spec.events; nil for the types that do not filter events.
	other func(token string) (map[string]string, []byte)
}

const (
	githubPushBody = `{"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246",` +
		`"after":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c","repository":{"id":1296269,"full_name":"acme/webapp",` +
		`"clone_url":"https://github.com/acme/webapp.git"},"pusher":{"name":"octocat"},"commits":[]}`
	gitlabPushBody = `{"object_kind":"push","event_name":"push","before":"95790bf891e76fee5e1747ab589903a6a1f80f22",` +
		`"after":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7","ref":"refs/heads/main","user_username":"jsmith",` +
		`"project":{"id":15,"path_with_namespace":"acme/webapp","git_http_url":"https://gitlab.example.com/acme/webapp.git"},` +
		`"total_commits_count":1}`
	bitbucketPushBody = `{"eventKey":"repo:refs_changed","date":"2024-06-17T19:37:57+1000","actor":{"name":"admin","id":1},` +
		`"repository":{"slug":"webapp","id":84,"project":{"key":"ACME"}},"changes":[{"ref":{"id":"refs/heads/main",` +
		`"displayId":"main","type":"BRANCH"},"refId":"refs/heads/main","fromHash":"ecddabb624f6f5ba43816f5926e580a5f680a932",` +
		`"toHash":"178864a7d521b6f5e720b386b2c2b0ef8563e0dc","type":"UPDATE"}]}`
	harborPushBody = `{"type":"PUSH_ARTIFACT","occur_at":1680501893,"operator":"admin","event_data":{"resources":[` +
		`{"digest":"sha256:954b378c375d852eb3c63ab88978f640b4348b01c1b3456a024a81536dafbbf4","tag":"v1.2.0",` +
		`"resource_url":"harbor.example.com/acme/webapp:v1.2.0"}],"repository":{"date_created":1680501800,"name":"webapp",` +
		`"namespace":"acme","repo_full_name":"acme/webapp","repo_type":"private"}}}`
	dockerHubPushBody = `{"callback_url":"https://registry.hub.docker.com/u/acme/webapp/hook/2141b5bi5i5b02bec211i4eeih0242eg11000a/",` +
		`"push_data":{"pushed_at":1417566161,"pusher":"acme","tag":"v1.2.0"},"repository":{"comment_count":0,` +
		`"date_created":1417494799,"name":"webapp","namespace":"acme","owner":"acme","repo_name":"acme/webapp",` +
		`"repo_url":"https://registry.hub.docker.com/u/acme/webapp/","status":"Active"}}`
	quayPushBody = `{"name":"webapp","repository":"acme/webapp","namespace":"acme","docker_url":"quay.io/acme/webapp",` +
		`"homepage":"https://quay.io/repository/acme/webapp","updated_tags":["v1.2.0","latest"]}`
	nexusComponentBody = `{"timestamp":"2024-11-10T23:57:49.664+0000","nodeId":"52905B51-085CCABB-CEBBEAAD-16795588-FC927D93",` +
		`"initiator":"admin/127.0.0.1","repositoryName":"docker-hosted","action":"CREATED","component":{` +
		`"id":"08909bf0c86cf6c9600aade89e1c5e25","componentId":"ZG9ja2VyLWhvc3RlZDowODkwOWJm","format":"docker",` +
		`"name":"acme/webapp","version":"v1.2.0"}}`
	acrPushBody = `{"id":"cb8c3971-9adc-488b-bdd8-43cbb4974ff5","timestamp":"2024-11-17T16:52:01.343145347Z","action":"push",` +
		`"target":{"mediaType":"application/vnd.docker.distribution.manifest.v2+json","size":524,` +
		`"digest":"sha256:80f0d5c8786bb9e621a45ece0db56d11cdc624ad20da9fe62e9d25490f331d7d","length":524,` +
		`"repository":"webapp","tag":"v1.2.0"},"request":{"id":"3cbb6949-7549-4fa1-86cd-a6d5451dffc7",` +
		`"host":"acme.azurecr.io","method":"PUT","useragent":"docker/24.0.7"}}`
	cdeventsType = "dev.cdevents.change.merged.0.2.0"
	cdeventBody  = `{"context":{"version":"0.4.1","id":"271069a8-fc18-44f1-b38f-9d70a1695819","source":"/ci/acme",` +
		`"type":"` + cdeventsType + `","timestamp":"2024-03-20T14:27:05.315384Z"},"subject":{"id":"pr-42",` +
		`"source":"/ci/acme","type":"change","content":{"repository":{"id":"acme/webapp","source":"https://github.com"}}}}`
	// notShaped is JSON of no service's shape.
	notShaped = `{"hello":"world"}`
)

// hookServices lists a request per Receiver type.
func hookServices() []hookService {
	githubHeaders := func(event string) func(string, []byte) map[string]string {
		return func(token string, body []byte) map[string]string {
			return map[string]string{"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/044aadd",
				"X-GitHub-Event": event, "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
				"X-GitHub-Hook-ID": "292430182", "X-Hub-Signature-256": "sha256=" + hmacSHA256(token, body)}
		}
	}
	gitlabHeaders := func(event string) func(string, []byte) map[string]string {
		return func(token string, _ []byte) map[string]string {
			return map[string]string{"Content-Type": "application/json", "User-Agent": "GitLab/17.0.0",
				"X-Gitlab-Event": event, "X-Gitlab-Token": token, "X-Gitlab-Instance": "https://gitlab.example.com",
				"X-Gitlab-Webhook-UUID": "16412aeb-b2a9-4b6e-a7a4-7f6a9f3a1c2d"}
		}
	}
	bitbucketHeaders := func(event string) func(string, []byte) map[string]string {
		return func(token string, body []byte) map[string]string {
			return map[string]string{"Content-Type": "application/json; charset=utf-8", "X-Event-Key": event,
				"X-Request-Id": "8e8e8e8e-1111-2222-3333-444455556666", "X-Hub-Signature": "sha256=" + hmacSHA256(token, body)}
		}
	}
	cdeventsHeaders := func(ceType string) func(string, []byte) map[string]string {
		return func(string, []byte) map[string]string {
			return map[string]string{"Content-Type": "application/json", "Ce-Specversion": "1.0",
				"Ce-Id": "271069a8-fc18-44f1-b38f-9d70a1695819", "Ce-Source": "/ci/acme", "Ce-Type": ceType}
		}
	}
	jsonOnly := func(string, []byte) map[string]string { return map[string]string{"Content-Type": "application/json"} }
	return []hookService{{
		typ: notificationv1.ReceiverTypeGeneric, body: `{"source":"ci","status":"built"}`,
		headers: jsonOnly, handled: "a webhook request",
	}, {
		typ: notificationv1.ReceiverTypeGenericHMAC, body: `{"source":"ci","status":"built"}`,
		headers: func(token string, body []byte) map[string]string {
			return map[string]string{"Content-Type": "application/json", "X-Signature": "sha256=" + hmacSHA256(token, body)}
		},
		authHeader: "X-Signature", handled: "a webhook request",
	}, {
		typ: notificationv1.ReceiverTypeGitHub, events: []string{"push"}, body: githubPushBody,
		headers: githubHeaders("push"), authHeader: "X-Hub-Signature-256", handled: "'push' event", wrongShape: "[]",
		other: func(token string) (map[string]string, []byte) {
			body := []byte(`{"action":"opened","issue":{"number":1347,"title":"Found a bug"}}`)
			return githubHeaders("issues")(token, body), body
		},
	}, {
		typ: notificationv1.ReceiverTypeGitLab, events: []string{"Push Hook"}, body: gitlabPushBody,
		headers: gitlabHeaders("Push Hook"), authHeader: "X-Gitlab-Token", handled: "'Push Hook' event", wrongShape: "[]",
		other: func(token string) (map[string]string, []byte) {
			body := []byte(`{"object_kind":"tag_push","ref":"refs/tags/v1.0.0"}`)
			return gitlabHeaders("Tag Push Hook")(token, body), body
		},
	}, {
		typ: notificationv1.ReceiverTypeBitbucket, events: []string{"repo:refs_changed"}, body: bitbucketPushBody,
		headers: bitbucketHeaders("repo:refs_changed"), authHeader: "X-Hub-Signature", handled: "'repo:refs_changed' event",
		wrongShape: "[]",
		other: func(token string) (map[string]string, []byte) {
			body := []byte(`{"eventKey":"pr:opened","pullRequest":{"id":1}}`)
			return bitbucketHeaders("pr:opened")(token, body), body
		},
	}, {
		typ: notificationv1.ReceiverTypeHarbor, body: harborPushBody,
		headers: func(token string, _ []byte) map[string]string {
			return map[string]string{"Content-Type": "application/json", "Authorization": token}
		},
		authHeader: "Authorization", handled: "'PUSH_ARTIFACT' event", wrongShape: notShaped,
	}, {
		typ: notificationv1.ReceiverTypeDockerHub, body: dockerHubPushBody, headers: jsonOnly,
		handled: "'push' event", wrongShape: notShaped,
	}, {
		typ: notificationv1.ReceiverTypeQuay, body: quayPushBody, headers: jsonOnly,
		handled: "'push' event", wrongShape: notShaped,
	}, {
		typ: notificationv1.ReceiverTypeNexus, body: nexusComponentBody,
		headers: func(token string, body []byte) map[string]string {
			mac := hmac.New(sha1.New, []byte(token))
			mac.Write(body)
			return map[string]string{"Content-Type": "application/json; charset=UTF-8", "User-Agent": "Nexus/3.68.0 (OSS; Linux; x86_64)",
				"X-Nexus-Webhook-Id": "rm:repository:component", "X-Nexus-Webhook-Delivery": "7f4a6dde-5c68-4999-bcc0-a62f3fb8ae48",
				"X-Nexus-Webhook-Signature": hex.EncodeToString(mac.Sum(nil))}
		},
		authHeader: "X-Nexus-Webhook-Signature", handled: "'rm:repository:component' event", wrongShape: notShaped,
	}, {
		typ: notificationv1.ReceiverTypeACR, body: acrPushBody, headers: jsonOnly,
		handled: "'push' event", wrongShape: notShaped,
	}, {
		typ: notificationv1.ReceiverTypeCDEvents, events: []string{cdeventsType}, body: cdeventBody,
		headers: cdeventsHeaders(cdeventsType), handled: "'" + cdeventsType + "' event", wrongShape: notShaped,
		other: func(token string) (map[string]string, []byte) {
			const started = "dev.cdevents.pipelinerun.started.0.1.1"
			body := []byte(strings.Replace(cdeventBody, cdeventsType, started, 1))
			return cdeventsHeaders(started)(token, body), body
		},
	}}
}

// TestEveryServiceThroughTheServer sends, for each Receiver type, requests
// as its service sends them to the Server against the control plane:
// unsigned, badly signed or of the wrong shape, they are refused and
// annotate nothing; for an event not in spec.events, nothing is done; as
// the service sends them, the selected GitRepository is annotated. No
// answer or event quotes the token.
func TestEveryServiceThroughTheServer(t *testing.T) {
	services := hookServices()
	var types []string
	for _, svc := range services {
		types = append(types, svc.typ)
	}
	NewWithT(t).Expect(types).To(ConsistOf(webhook.Types()), "every Receiver type has a case")
	for _, svc := range services {
		t.Run(svc.typ, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.CreateNamespace(t)
			token := "t0ken-of-" + svc.typ + "-8c1e"
			createTokenSecret(g, ns, "token", token)
			repo := newGitRepository(g, ns, "webapp")
			rcv := createReceiver(g, ns, "hook", svc.typ, func(r *notificationv1.Receiver) { r.Spec.Events = svc.events },
				notificationv1.ResourceReference{Kind: sourcev1.GitRepositoryKind, Name: "webapp"})
			path := waitReady(g, rcv).Status.WebhookPath
			body := []byte(svc.body)
			annotated := func() bool {
				_, ok := annotations(g, repo)[meta.ReconcileRequestAnnotation]
				return ok
			}
			refused := func(what string, code, want int) {
				t.Helper()
				g.Expect(code).To(Equal(want), what)
				g.Expect(annotated()).To(BeFalse(), "%s annotates nothing", what)
			}

			// The path is the only authentication of some types: the
			// path of another token is not served.
			code, _ := postWebhook(g, expectedPath("not-"+token, rcv.Name, ns), svc.headers(token, body), body)
			refused("the path of another token", code, http.StatusNotFound)
			if svc.authHeader != "" {
				unsigned := svc.headers(token, body)
				delete(unsigned, svc.authHeader)
				code, answer := postWebhook(g, path, unsigned, body)
				refused("an unsigned request", code, http.StatusUnauthorized)
				g.Expect(answer).To(Equal("unauthorized\n"))
				forged := svc.headers("not-"+token, body)
				code, _ = postWebhook(g, path, forged, body)
				refused("a request signed with another token", code, http.StatusUnauthorized)
				tampered := append([]byte(svc.body[:len(svc.body)-1]), []byte(`,"x":1}`)...)
				if svc.typ != notificationv1.ReceiverTypeGitLab && svc.typ != notificationv1.ReceiverTypeHarbor {
					code, _ = postWebhook(g, path, svc.headers(token, body), tampered)
					refused("a body changed after signing", code, http.StatusUnauthorized)
				}
			}
			if svc.wrongShape != "" {
				for _, bad := range []string{svc.wrongShape, `{"truncated": [`} {
					code, answer := postWebhook(g, path, svc.headers(token, []byte(bad)), []byte(bad))
					refused("a payload "+bad, code, http.StatusBadRequest)
					g.Expect(answer).To(Equal("bad webhook payload\n"))
				}
			}
			if svc.other != nil {
				headers, body := svc.other(token)
				code, answer := postWebhook(g, path, headers, body)
				g.Expect(code).To(Equal(http.StatusOK), answer)
				g.Expect(answer).To(Equal("skipped\n"))
				g.Expect(annotated()).To(BeFalse(), "an event not in spec.events annotates nothing")
			}

			code, answer := postWebhook(g, path, svc.headers(token, body), body)
			g.Expect(code).To(Equal(http.StatusOK), answer)
			g.Expect(answer).To(Equal("requested 1 object\n"))
			g.Expect(annotated()).To(BeTrue())

			g.Eventually(func(g Gomega) []string {
				return testutil.EventMessages(g, env.Client, rcv, notificationv1.ReceiverKind)
			}, timeout, interval).Should(ContainElement(WebhookHandledReason + ": handled " + svc.handled + ": requested 1 object"))
			messages := testutil.EventMessages(g, env.Client, rcv, notificationv1.ReceiverKind)
			if svc.authHeader != "" || svc.wrongShape != "" {
				g.Expect(slices.ContainsFunc(messages, func(m string) bool { return strings.HasPrefix(m, WebhookRefusedReason+": ") })).
					To(BeTrue(), "the refusals are events: %v", messages)
			}
			for _, m := range messages {
				g.Expect(m).NotTo(ContainSubstring(token))
			}
		})
	}
}
