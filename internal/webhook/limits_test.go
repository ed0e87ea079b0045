package webhook

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestVerifyStopsReadingAnOversizedBody: a 10 MiB body of unknown length is
// refused after reading MaxBodyBytes+1 bytes, and the handler returns while
// the client is still sending: the client holds the rest of the body back
// until the handler has returned (or 10 s have passed, in which case a
// Verify that read everything makes the test fail instead of hang).
func TestVerifyStopsReadingAnOversizedBody(t *testing.T) {
	g := NewWithT(t)
	const total = 10 << 20
	var clientSent atomic.Int64
	handlerDone := make(chan struct{})
	got := make(chan outcome, 1)
	var sentWhenDone int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		body := &countingBody{ReadCloser: r.Body}
		r.Body = body
		res, err := Verify(r, Spec{Type: TypeGitHub, Token: testToken})
		sentWhenDone = clientSent.Load()
		got <- outcome{res: res, err: err, read: body.n}
		close(handlerDone)
		w.WriteHeader(HTTPStatus(err))
	})

	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for clientSent.Load() < total {
			if clientSent.Load() == 2<<20 {
				select {
				case <-handlerDone:
				case <-time.After(10 * time.Second):
				}
			}
			n, err := pw.Write(chunk)
			clientSent.Add(int64(n))
			if err != nil {
				return
			}
		}
		_ = pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/hook/x", pr)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-GitHub-Event", "push")
	resp, err := srv.Client().Do(req)
	if err == nil { // the server may also close the connection mid-body
		g.Expect(resp.StatusCode).To(Equal(http.StatusRequestEntityTooLarge))
		_ = resp.Body.Close()
	}
	_ = pr.CloseWithError(errors.New("test over"))

	var out outcome
	g.Eventually(got, 20*time.Second).Should(Receive(&out))
	g.Expect(errors.Is(out.err, ErrTooLarge)).To(BeTrue(), "%v", out.err)
	g.Expect(out.read).To(BeNumerically("<=", MaxBodyBytes+1))
	g.Expect(sentWhenDone).To(BeNumerically("<", total))
}

// TestVerifyBodyBound: a body of exactly MaxBodyBytes is read; one byte more
// is refused, with or without a declared length; a declared length over the
// bound is refused without reading anything, before the signature is
// checked.
func TestVerifyBodyBound(t *testing.T) {
	atBound := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("p"), MaxBodyBytes-10)...), '"', '}')
	overBound := append([]byte(" "), atBound...)
	tests := []struct {
		name        string
		body        io.Reader
		wantErr     error
		wantReadMax int64
	}{
		{name: "exactly the bound", body: bytes.NewReader(atBound), wantReadMax: MaxBodyBytes},
		{name: "one byte over, unknown length", body: io.MultiReader(bytes.NewReader(overBound)), wantErr: ErrTooLarge, wantReadMax: MaxBodyBytes + 1},
		{name: "declared over the bound", body: bytes.NewReader(overBound), wantErr: ErrTooLarge, wantReadMax: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := Spec{Type: TypeGenericHMAC, Token: testToken}
			h := http.Header{"X-Signature": {"sha256=" + hmacHex(sha256.New, testToken, atBound)}}
			got, status := verifyOverHTTP(t, spec, tt.body, h)
			g.Expect(got.read).To(BeNumerically("<=", tt.wantReadMax))
			if tt.wantErr == nil {
				g.Expect(got.err).NotTo(HaveOccurred())
				g.Expect(got.res.Payload).To(HaveKey("pad"))
				return
			}
			g.Expect(errors.Is(got.err, tt.wantErr)).To(BeTrue(), "%v", got.err)
			g.Expect(status).To(Equal(http.StatusRequestEntityTooLarge))
		})
	}
}

// TestVerifyMaxBytesReader: a body the HTTP layer already bounds with
// http.MaxBytesReader below MaxBodyBytes is refused as too large too.
func TestVerifyMaxBytesReader(t *testing.T) {
	g := NewWithT(t)
	var got error
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 10)
		_, got = Verify(r, Spec{Type: TypeGeneric, Token: testToken})
		w.WriteHeader(HTTPStatus(got))
	})
	resp, err := srv.Client().Post(srv.URL, "application/json", io.MultiReader(bytes.NewReader(make([]byte, 100))))
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusRequestEntityTooLarge))
	g.Expect(errors.Is(got, ErrTooLarge)).To(BeTrue(), "%v", got)
}
