package bucket

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil"
)

// TestNoLeak_ListAndDownload (security row 44) lists
// and downloads a bucket, and fails to, many times: against versitygw (a
// whole bucket, and an object over MaxObjectSize) and against a server
// that sends more than it listed, answers 500 to a download and to a
// listing, or stalls until the deadline. Afterwards the process holds no
// more open files and goroutines than before (see testutil.ExpectNoLeaks).
func TestNoLeak_ListAndDownload(t *testing.T) {
	g := NewWithT(t)
	f := startS3(t, sampleFiles)
	s3 := f.client(t, nil)
	h := &hostile{
		list: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("prefix") == "broken/" {
				writeS3Error(w, http.StatusInternalServerError, "InternalError", "the listing broke")
				return
			}
			writeListing(w, []Object{{Key: "a", Size: 2}})
		},
		get: func(w http.ResponseWriter, r *http.Request, key string) {
			switch key {
			case "longer":
				serveBody(w, strings.Repeat("y", 64<<10))
			case "broken":
				writeS3Error(w, http.StatusInternalServerError, "InternalError", "the object broke")
			case "stalls":
				objectHeaders(w, 1024)
				_, _ = w.Write([]byte("x"))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			default:
				serveBody(w, "hi")
			}
		},
	}
	evil := h.start(t)
	// minio-go still retries a 500 maxRetries times, only without waiting
	// up to a second between tries.
	unit, retryCap := minio.DefaultRetryUnit, minio.DefaultRetryCap
	minio.DefaultRetryUnit, minio.DefaultRetryCap = time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { minio.DefaultRetryUnit, minio.DefaultRetryCap = unit, retryCap })
	ctx := context.Background()

	round := func() {
		objs, err := s3.List(ctx, f.s3.Bucket, "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(objs).To(HaveLen(len(sampleFiles)))
		g.Expect(s3.Download(ctx, f.s3.Bucket, objs, t.TempDir(), DownloadOptions{})).To(Succeed())

		err = s3.Download(ctx, f.s3.Bucket, objs, t.TempDir(), DownloadOptions{MaxObjectSize: 10})
		g.Expect(err).To(MatchError(ContainSubstring("more than the limit of 10 bytes")))

		err = evil.Download(ctx, "hostile", []Object{{Key: "longer", Size: 16}}, t.TempDir(), DownloadOptions{})
		g.Expect(err).To(MatchError(ContainSubstring("the object is larger than its listed 16 bytes")))

		err = evil.Download(ctx, "hostile", []Object{{Key: "a", Size: 2}, {Key: "broken", Size: 2}}, t.TempDir(), DownloadOptions{})
		g.Expect(err).To(MatchError(ContainSubstring("(HTTP 500): the object broke")))

		_, err = evil.List(ctx, "hostile", "broken/")
		g.Expect(err).To(MatchError(ContainSubstring("(HTTP 500): the listing broke")))

		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err = evil.Download(short, "hostile", []Object{{Key: "stalls", Size: 1024}}, t.TempDir(), DownloadOptions{})
		g.Expect(err).To(MatchError(context.DeadlineExceeded))
	}
	// Both clients share sharedTransport: its idle connections are the
	// pool's, not a leak.
	closeIdle := func() { sharedTransport().(*http.Transport).CloseIdleConnections() }
	testutil.ExpectNoLeaks(t, g, round, closeIdle)
	h.waitHandlers(t)
}
