package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testservers"
)

// tarEntry is an entry of a hand-made layer: a file with body, or a
// symbolic link to link.
type tarEntry struct {
	name, body, link string
}

// tarGz returns a tar.gz of entries, written as they are (no checks), for
// layers that a well-behaved client would never push.
func tarGz(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.link != "" {
			hdr = &tar.Header{Name: e.name, Mode: 0o777, Linkname: e.link, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pushRawLayer pushes an artifact whose one layer is layer, as it is, to
// host/repoTag.
func pushRawLayer(t *testing.T, g *WithT, host, repoTag string, layer []byte) {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, oci.ConfigMediaType)
	img, err := mutate.AppendLayers(img, static.NewLayer(layer, oci.ContentMediaType))
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := name.NewTag(host+"/"+repoTag, name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(ref, img)).To(Succeed())
}

// pushTLS pushes files as an artifact to repoTag of the distribution
// registry reg, with its credentials and CA.
func pushTLS(t *testing.T, g *WithT, reg *testservers.Registry, repoTag string, files map[string]string) oci.Pushed {
	t.Helper()
	tlsConfig, err := testservers.ClientTLSConfig(reg.CAPEM)
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := name.NewTag(reg.Host + "/" + repoTag)
	g.Expect(err).NotTo(HaveOccurred())
	pushed, err := oci.Push(context.Background(), ref, oci.PushRequest{Dir: testutil.WriteTree(t, files)}, oci.Options{
		Username: reg.Username, Password: reg.Password, Transport: &http.Transport{TLSClientConfig: tlsConfig},
	})
	g.Expect(err).NotTo(HaveOccurred())
	return pushed
}
