package registry

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestNoLeak_ScanAndDigest (security row 44) scans repositories, and fails to,
// many times: a scan that stores the tags, one that finds them unchanged,
// and scans of a registry answering 500 (retried by go-containerregistry
// until its context ends, here once the 500 is answered), of a
// missing repository, of one with more tags than MaxTags and of one that
// stalls past the timeout; and reads digests, of a tag and of a missing
// one. Afterwards the process holds no more open files and goroutines than
// before (see testutil.ExpectNoLeaks).
func TestNoLeak_ScanAndDigest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var broken atomic.Int32
	// stopBroken ends the scan of the broken repository once the registry
	// has answered it 500: the scan retries until its context ends.
	var stopBroken atomic.Pointer[context.CancelFunc]
	reg := startRegistry(t, "", "", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasPrefix(r.URL.Path, "/v2/broken/"):
				broken.Add(1)
				http.Error(w, "the registry broke", http.StatusInternalServerError)
				if stop := stopBroken.Load(); stop != nil {
					(*stop)()
				}
			case strings.HasPrefix(r.URL.Path, "/v2/stalls/"):
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"name":"stalls","tags":["`))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			default:
				h.ServeHTTP(w, r)
			}
		})
	})
	push(t, reg.image("app"), numbered("v", 30))
	s := newStore(t)
	name := 0

	round := func() {
		name++
		fresh := "app-" + strings.Repeat("x", name) // a new ImageRepository: its tags are written
		res, err := s.Scan(ctx, "apps", fresh, Options{Image: reg.image("app")})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Changed).To(BeTrue())
		res, err = s.Scan(ctx, "apps", fresh, Options{Image: reg.image("app")})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Changed).To(BeFalse())
		g.Expect(res.TagCount).To(Equal(30))

		answered := broken.Load()
		brokenCtx, stop := context.WithCancel(ctx)
		stopBroken.Store(&stop)
		_, err = s.Scan(brokenCtx, "apps", "broken", Options{Image: reg.image("broken"), Timeout: time.Minute})
		stop()
		g.Expect(err).To(HaveOccurred())
		g.Expect(broken.Load()).To(BeNumerically(">", answered), "the registry answered 500")
		_, err = s.Scan(ctx, "apps", "missing", Options{Image: reg.image("missing")})
		g.Expect(IsNotFound(err)).To(BeTrue(), "%v", err)
		_, err = s.Scan(ctx, "apps", "many", Options{Image: reg.image("app"), MaxTags: 10})
		g.Expect(err).To(MatchError(ContainSubstring("more than 10 tags")))
		_, err = s.Scan(ctx, "apps", "stalls", Options{Image: reg.image("stalls"), Timeout: 100 * time.Millisecond})
		g.Expect(err).To(MatchError(context.DeadlineExceeded))

		digest, err := Digest(ctx, reg.image("app")+":v0001", Options{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(digest).To(HavePrefix("sha256:"))
		_, err = Digest(ctx, reg.image("app")+":gone", Options{})
		g.Expect(IsNotFound(err)).To(BeTrue(), "%v", err)
	}
	testutil.ExpectNoLeaks(t, g, round)
}
