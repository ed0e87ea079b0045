package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// A request made by NewRequest for each type, with its sample payload or
// with a payload of the user's, is accepted by Verify for the event
// expected; made with another token, it is refused for every type that
// authenticates more than the path; its body changed after signing, it is
// refused for every type that signs the body.
func TestNewRequest_VerifiedAsTheServiceWould(t *testing.T) {
	signsBody := map[string]bool{TypeGenericHMAC: true, TypeGitHub: true, TypeBitbucket: true, TypeNexus: true}
	for _, s := range services {
		t.Run(s.typ, func(t *testing.T) {
			g := NewWithT(t)
			spec := Spec{Type: s.typ, Token: testToken}
			for _, body := range [][]byte{nil, []byte(s.body)} {
				req, err := NewRequest(context.Background(), "http://127.0.0.1/hook/x", spec, body)
				g.Expect(err).NotTo(HaveOccurred())
				res, err := Verify(req, spec)
				g.Expect(err).NotTo(HaveOccurred(), "body %q", body)
				g.Expect(res.Skip).To(BeFalse(), res.Reason)
				if want := DefaultEvents[s.typ]; want != "" && body == nil {
					g.Expect(res.Event).To(Equal(want))
				} else if body != nil {
					g.Expect(res.Event).To(Equal(s.event))
				}
			}

			forged, err := NewRequest(context.Background(), "http://127.0.0.1/hook/x", Spec{Type: s.typ, Token: wrongToken}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = Verify(forged, spec)
			if s.authHeader == "" {
				g.Expect(err).NotTo(HaveOccurred(), "the path is the only authentication of %s", s.typ)
			} else {
				g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "%v", err)
			}

			if signsBody[s.typ] {
				tampered, err := NewRequest(context.Background(), "http://127.0.0.1/hook/x", spec, nil)
				g.Expect(err).NotTo(HaveOccurred())
				body, _ := io.ReadAll(tampered.Body)
				tampered.Body = io.NopCloser(strings.NewReader(string(body) + " "))
				tampered.ContentLength = -1
				_, err = Verify(tampered, spec)
				g.Expect(errors.Is(err, ErrUnauthorized)).To(BeTrue(), "%v", err)
			}
		})
	}
}

// The event sent is the Receiver's first event, so that a Receiver that
// filters on events accepts it, and the user's payload is sent unchanged.
func TestNewRequest_EventOfTheReceiver(t *testing.T) {
	g := NewWithT(t)
	spec := Spec{Type: TypeGitLab, Token: testToken, Events: []string{"Tag Push Hook"}}
	payload := []byte(`{"object_kind":"tag_push","ref":"refs/tags/v1.0.0"}`)
	req, err := NewRequest(context.Background(), "http://127.0.0.1/hook/x", spec, payload)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(req.Method).To(Equal(http.MethodPost))
	g.Expect(req.Header.Get("X-Gitlab-Event")).To(Equal("Tag Push Hook"))
	res, err := Verify(req, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Skip).To(BeFalse(), res.Reason)
	g.Expect(res.Payload).To(HaveKeyWithValue("object_kind", "tag_push"))

	cd := Spec{Type: TypeCDEvents, Token: testToken, Events: []string{"dev.cdevents.change.merged.0.2.0"}}
	req, err = NewRequest(context.Background(), "http://127.0.0.1/hook/x", cd, nil)
	g.Expect(err).NotTo(HaveOccurred())
	res, err = Verify(req, cd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Event).To(Equal("dev.cdevents.change.merged.0.2.0"))
}

// A structured-mode CloudEvent given as the payload is sent as one, without
// Ce-* headers, and accepted.
func TestNewRequest_StructuredCloudEvent(t *testing.T) {
	g := NewWithT(t)
	spec := Spec{Type: TypeCDEvents, Token: testToken}
	payload := []byte(`{"specversion":"1.0","type":"dev.cdevents.pipelinerun.finished.0.2.0","source":"ci","id":"1",` +
		`"data":{"context":{"type":"dev.cdevents.pipelinerun.finished.0.2.0"},"subject":{"id":"run-1"}}}`)
	req, err := NewRequest(context.Background(), "http://127.0.0.1/hook/x", spec, payload)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(req.Header.Get("Ce-Type")).To(BeEmpty())
	g.Expect(req.Header.Get("Content-Type")).To(Equal("application/cloudevents+json"))
	res, err := Verify(req, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Event).To(Equal("dev.cdevents.pipelinerun.finished.0.2.0"))
}

// An unknown type is refused before anything is sent.
func TestNewRequest_UnknownType(t *testing.T) {
	g := NewWithT(t)
	_, err := NewRequest(context.Background(), "http://127.0.0.1/hook/x", Spec{Type: "gcr", Token: testToken}, nil)
	g.Expect(errors.Is(err, ErrUnsupportedType)).To(BeTrue(), "%v", err)
}
