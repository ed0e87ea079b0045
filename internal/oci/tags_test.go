package oci

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"
)

// tagLister starts a registry whose tag lists tags answers, and returns
// its repository app.
func tagLister(t *testing.T, tags http.HandlerFunc) name.Repository {
	t.Helper()
	repo, err := name.NewRepository((&hostileRegistry{tags: tags}).start(t)+"/app", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func TestListTagsIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags http.HandlerFunc
		want string
	}{
		{
			name: "a page that streams forever",
			tags: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(`{"name":"app","tags":["0.0.1-pad"`))
				pad := []byte(strings.Repeat(`,"0.0.1-pad"`, 1000))
				for written := 0; written < 20*MaxTagPage; written += len(pad) {
					if _, err := w.Write(pad); err != nil {
						return // the client gave up
					}
				}
			},
			want: "larger than " + strconv.Itoa(MaxTagPage) + " bytes",
		},
		{
			name: "pages that link to more pages forever",
			tags: func(w http.ResponseWriter, r *http.Request) {
				page, _ := strconv.Atoi(r.URL.Query().Get("page"))
				w.Header().Set("Link", fmt.Sprintf(`</v2/app/tags/list?page=%d>; rel="next"`, page+1))
				tags := make([]string, 1000)
				for i := range tags {
					tags[i] = fmt.Sprintf(`"%d.%d.0"`, page, i)
				}
				fmt.Fprintf(w, `{"name":"app","tags":[%s]}`, strings.Join(tags, ","))
			},
			want: "more than 100000 tags",
		},
		{
			name: "an empty page that links to another",
			tags: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Link", `</v2/app/tags/list?again=1>; rel="next"`)
				_, _ = w.Write([]byte(`{"name":"app","tags":[]}`))
			},
			want: "empty page of tags",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := tagLister(t, tc.tags)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ListTags(context.Background(), repo, Options{Insecure: true})
			runtime.ReadMemStats(&after)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 160<<20), "bytes allocated")

			_, err = LatestSemverTag(context.Background(), repo, ">=1.0.0", "", Options{Insecure: true})
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)), "resolving a semver range")
		})
	}
}

func TestListTagsFollowsPages(t *testing.T) {
	g := NewWithT(t)
	repo := tagLister(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("last") == "" {
			w.Header().Set("Link", `</v2/app/tags/list?last=b>; rel="next"`)
			_, _ = w.Write([]byte(`{"name":"app","tags":["a","b"]}`))
			return
		}
		_, _ = w.Write([]byte(`{"name":"app","tags":["c"]}`))
	})
	tags, err := ListTags(context.Background(), repo, Options{Insecure: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(Equal([]string{"a", "b", "c"}))
}
