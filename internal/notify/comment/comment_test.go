package comment

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

const token = "s3cr3t-forge-token"

// forgeCase is one provider type: the header its token travels in, the
// edit's method and path, the page size (the marker is looked for past
// the first page), and the pull requests the forge lists for commitSHA.
type forgeCase struct {
	typ      string
	auth     [2]string
	editPath string
	pageSize int
	pulls    []map[string]any
}

var forgeCases = []forgeCase{
	{typ: "githubpullrequestcomment", auth: [2]string{"Authorization", "Bearer " + token},
		editPath: "PATCH /api/v3/repos/acme/app/issues/comments/", pageSize: 100,
		pulls: []map[string]any{{"number": 9, "state": "closed", "merged_at": "2024-04-30T10:00:00Z"}, {"number": 7, "state": "open"}}},
	{typ: "gitlabmergerequestcomment", auth: [2]string{"PRIVATE-TOKEN", token},
		editPath: "PUT /api/v4/projects/acme%2Fapp/merge_requests/7/notes/", pageSize: 100,
		pulls: []map[string]any{{"iid": 7, "state": "opened"}, {"iid": 9, "state": "merged"}}},
	{typ: "giteapullrequestcomment", auth: [2]string{"Authorization", "token " + token},
		editPath: "PATCH /api/v1/repos/acme/app/issues/comments/", pageSize: 50,
		pulls: []map[string]any{{"number": 7, "state": "open", "merged": false}}},
}

func event(name, message, severity string, metadata map[string]string) notify.Message {
	return notify.Message{Event: eventv1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "HelmRelease", Namespace: "preview", Name: name},
		Severity:       severity, Timestamp: metav1.NewTime(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)),
		Message: message, Reason: "Progressing", ReportingController: "helm-controller", Metadata: metadata,
	}}
}

// TestOneCommentPerRequest: the first event of an object creates its
// comment on the pull request its change_request names, past a page of
// other comments; later events edit that comment (one comment in the
// end); another object has a comment of its own; an event without
// change_request reaches the pull request of its commit.
func TestOneCommentPerRequest(t *testing.T) {
	for _, tc := range forgeCases {
		t.Run(tc.typ, func(t *testing.T) {
			g := NewWithT(t)
			srv := newForgeServer(t, tc.auth, tc.pulls)
			srv.seed("7", tc.pageSize+5)
			n, err := New(notify.Config{AllowLoopback: true, Type: tc.typ, Address: srv.URL + "/acme/app", Token: token, TLS: srv.tlsConfig()})
			g.Expect(err).NotTo(HaveOccurred())
			ctx := context.Background()
			pr7 := map[string]string{eventv1.MetaChangeRequest: "7", "preview-url": "https://app-7.example.com"}

			g.Expect(n.Post(ctx, event("app-7", "Helm install succeeded", eventv1.SeverityInfo, pr7))).To(Succeed())
			g.Expect(srv.ours("7")).To(HaveLen(1))
			first := srv.ours("7")[0]
			g.Expect(first.Body).To(HavePrefix("<!-- windlass:notification helmrelease/app-7.preview -->\n### ✅ helmrelease/app-7.preview"))
			g.Expect(first.Body).To(ContainSubstring("> Helm install succeeded"))
			g.Expect(first.Body).To(ContainSubstring("- **preview-url**: `https://app-7.example.com`"))
			g.Expect(first.Body).NotTo(ContainSubstring("change_request"))

			g.Expect(n.Post(ctx, event("app-7", "Helm upgrade failed: <timeout>", eventv1.SeverityError, pr7))).To(Succeed())
			g.Expect(srv.ours("7")).To(HaveLen(1), "the second event edits the first comment")
			edited := srv.ours("7")[0]
			g.Expect(edited.ID).To(Equal(first.ID))
			g.Expect(edited.Body).To(ContainSubstring("### ❌ helmrelease/app-7.preview"))
			g.Expect(edited.Body).To(ContainSubstring("> Helm upgrade failed: &lt;timeout&gt;"))
			g.Expect(edited.Body).NotTo(ContainSubstring("install succeeded"))
			g.Expect(srv.edits).To(ConsistOf(HavePrefix(tc.editPath)))

			g.Expect(n.Post(ctx, event("worker-7", "Helm install succeeded", eventv1.SeverityInfo, pr7))).To(Succeed())
			g.Expect(srv.ours("7")).To(HaveLen(2), "another object has its own comment")

			byCommit := map[string]string{"helm.toolkit.fluxcd.io/revision": "pr-7@sha1:" + commitSHA}
			g.Expect(n.Post(ctx, event("app-7", "Helm test passed", eventv1.SeverityInfo, byCommit))).To(Succeed())
			g.Expect(srv.ours("7")).To(HaveLen(2))
			g.Expect(srv.ours("7")[0].Body).To(ContainSubstring("> Helm test passed"))
			g.Expect(srv.ours("9")).To(BeEmpty(), "a merged pull request gets no comment")
			g.Expect(srv.creates).To(Equal(2))
			g.Expect(srv.unauthored).To(BeZero())
		})
	}
}

// TestNothingToComment: an event without change_request whose revision
// holds no commit, or whose commit belongs to no pull request, sends
// nothing; a change_request that is no number is an error.
func TestNothingToComment(t *testing.T) {
	for _, tc := range forgeCases {
		t.Run(tc.typ, func(t *testing.T) {
			g := NewWithT(t)
			srv := newForgeServer(t, tc.auth, nil)
			n, err := New(notify.Config{AllowLoopback: true, Type: tc.typ, Address: srv.URL + "/acme/app", Token: token, TLS: srv.tlsConfig()})
			g.Expect(err).NotTo(HaveOccurred())
			ctx := context.Background()
			g.Expect(n.Post(ctx, event("app", "Applied", eventv1.SeverityInfo, nil))).To(Succeed())
			oci := map[string]string{"source.toolkit.fluxcd.io/revision": "latest@sha256:" + strings.Repeat("a", 64)}
			g.Expect(n.Post(ctx, event("app", "Applied", eventv1.SeverityInfo, oci))).To(Succeed())
			lonely := map[string]string{"source.toolkit.fluxcd.io/revision": "main@sha1:" + strings.Repeat("b", 40)}
			g.Expect(n.Post(ctx, event("app", "Applied", eventv1.SeverityInfo, lonely))).To(Succeed())
			g.Expect(srv.creates).To(BeZero())
			err = n.Post(ctx, event("app", "Applied", eventv1.SeverityInfo, map[string]string{eventv1.MetaChangeRequest: "feature-x"}))
			g.Expect(err).To(MatchError(ContainSubstring(`the event's change_request "feature-x" is not a`)))
		})
	}
}

// TestRefusedAnswer: a refused request is an error that names the pull
// request and quotes the answer without the token.
func TestRefusedAnswer(t *testing.T) {
	g := NewWithT(t)
	srv := newForgeServer(t, [2]string{"Authorization", "Bearer another-token"}, nil)
	n, err := New(notify.Config{AllowLoopback: true, Type: "githubpullrequestcomment", Address: srv.URL + "/acme/app", Token: token, TLS: srv.tlsConfig()})
	g.Expect(err).NotTo(HaveOccurred())
	err = n.Post(context.Background(), event("app", "Applied", eventv1.SeverityInfo, map[string]string{eventv1.MetaChangeRequest: "#7"}))
	var se *notify.StatusError
	g.Expect(err).To(BeAssignableToTypeOf(se))
	g.Expect(err).To(MatchError(ContainSubstring("GET ")))
	g.Expect(err).To(MatchError(ContainSubstring(": 401 Unauthorized")))
	g.Expect(err.Error()).NotTo(ContainSubstring(token))
	g.Expect(srv.unauthored).To(Equal(1))
}

// TestNewRefuses: an address that is not a repository, or no token, is
// refused when the Provider is read.
func TestNewRefuses(t *testing.T) {
	tests := []struct {
		cfg     notify.Config
		wantErr string
	}{
		{notify.Config{AllowLoopback: true, Type: "githubpullrequestcomment", Address: "https://github.com/acme", Token: token}, "want https://HOST/OWNER/REPO"},
		{notify.Config{AllowLoopback: true, Type: "gitlabmergerequestcomment", Address: "https://gitlab.com/acme/app"}, "no token"},
		{notify.Config{AllowLoopback: true, Type: "giteapullrequestcomment", Address: "http://169.254.169.254/acme/app", Token: token}, "link-local"},
		{notify.Config{AllowLoopback: true, Type: "github", Address: "https://github.com/acme/app", Token: token}, "not a pull request comment type"},
	}
	for _, tt := range tests {
		t.Run(tt.wantErr, func(t *testing.T) {
			g := NewWithT(t)
			_, err := New(tt.cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(token))
		})
	}
}
