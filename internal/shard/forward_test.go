package shard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

func TestForward(t *testing.T) {
	g := NewWithT(t)
	answer := func(who string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, who+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+r.Header.Get(ForwardedHeader))
		})
	}
	var locateHolder func(*http.Request) string
	holder := httptest.NewServer(Forward(answer("holder"), func(r *http.Request) string { return locateHolder(r) }))
	t.Cleanup(holder.Close)
	locateHolder = func(*http.Request) string { return "http://" + holder.Listener.Addr().String() }
	here := httptest.NewServer(Forward(answer("here"), func(r *http.Request) string {
		if r.URL.Path == "/images/ns/held-elsewhere/tags" {
			return "http://" + holder.Listener.Addr().String()
		}
		return ""
	}))
	t.Cleanup(here.Close)

	get := func(path string) string {
		req, err := http.NewRequest(http.MethodGet, here.URL+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer t0k")
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return string(body)
	}
	g.Expect(get("/images/ns/held-here/tags")).To(Equal("here /images/ns/held-here/tags Bearer t0k "))
	g.Expect(get("/images/ns/held-elsewhere/tags")).To(Equal("holder /images/ns/held-elsewhere/tags Bearer t0k 1"),
		"forwarded with its token, and answered by the holder even though the holder's cache would forward it again")

	bad := httptest.NewServer(Forward(answer("bad"), func(*http.Request) string { return "http://[::1" }))
	t.Cleanup(bad.Close)
	resp, err := http.Get(bad.URL + "/x")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadGateway))
}
