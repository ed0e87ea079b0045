package chat

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/notify"
)

// zoomShape checks the format=full message: the object as head, the
// severity as sub head, the text and the facts in the body.
func zoomShape(g Gomega, r recorded) (string, string) {
	content := object(g, decode(g, r.Body), "content")
	head := object(g, content, "head")
	parts := items(g, content, "body")
	g.Expect(parts).To(HaveLen(2))
	g.Expect(str(g, parts[0], "type")).To(Equal("message"))
	g.Expect(str(g, parts[1], "type")).To(Equal("fields"))
	visible := []string{str(g, head, "text"), str(g, parts[0], "text")}
	for _, f := range items(g, parts[1], "items") {
		visible = append(visible, str(g, f, "key")+": "+str(g, f, "value"))
	}
	g.Expect(visible).To(ContainElement("revision: " + revision))
	return strings.Join(visible, "\n"), str(g, object(g, head, "sub_head"), "text")
}

// TestZoomFormat: an address that pins a format keeps it, and a missing
// token is refused without sending anything.
func TestZoomFormat(t *testing.T) {
	g := NewWithT(t)
	rec := newRecorder(t, http.StatusOK)
	n, err := New(notify.Config{AllowLoopback: true, Type: "zoom", Address: rec.srv.URL + "/hook?format=message", Token: secretToken, TLS: rec.tls()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), testMessages()["error"])).To(Succeed())
	g.Expect(rec.last().RawQuery).To(Equal("format=message"))
	_, err = New(notify.Config{AllowLoopback: true, Type: "zoom", Address: rec.srv.URL + "/hook"})
	g.Expect(err).To(MatchError(ContainSubstring("zoom provider: the token (the Secret's token key")))
}
