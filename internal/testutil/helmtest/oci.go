package helmtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// Media types of a Helm chart in an OCI registry.
const (
	// OCIConfigMediaType is the media type of the config blob: the chart's
	// metadata as JSON.
	OCIConfigMediaType types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	// OCIChartMediaType is the media type of the layer holding the .tgz.
	OCIChartMediaType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// PushOption configures PushOCI.
type PushOption func(*pushConfig)

type pushConfig struct {
	user, pass string
	tag        string
}

// WithRegistryAuth pushes with basic auth.
func WithRegistryAuth(user, pass string) PushOption {
	return func(c *pushConfig) { c.user, c.pass = user, pass }
}

// WithOCITag pushes under tag instead of the chart's version.
func WithOCITag(tag string) PushOption {
	return func(c *pushConfig) { c.tag = tag }
}

// PushOCI pushes ch to registryHost/repo (plain HTTP; repo such as
// "charts/podinfo") as Helm does: an OCI image manifest whose config is
// the chart's metadata as JSON (OCIConfigMediaType) and whose one layer is
// the packaged chart (OCIChartMediaType), tagged with the chart's version
// where '+' becomes '_'. It returns the manifest's digest, "sha256:<hex>".
func PushOCI(t testing.TB, registryHost, repo string, ch *chart.Chart, opts ...PushOption) string {
	t.Helper()
	cfg := pushConfig{tag: strings.ReplaceAll(ch.Metadata.Version, "+", "_")}
	for _, opt := range opts {
		opt(&cfg)
	}
	ref, err := name.NewTag(registryHost+"/"+repo+":"+cfg.tag, name.Insecure)
	if err != nil {
		t.Fatalf("helmtest: OCI reference: %v", err)
	}
	ropts := []remote.Option{}
	if cfg.user != "" {
		ropts = append(ropts, remote.WithAuth(&authn.Basic{Username: cfg.user, Password: cfg.pass}))
	}
	configJSON, err := json.Marshal(ch.Metadata)
	if err != nil {
		t.Fatalf("helmtest: chart metadata: %v", err)
	}
	config := static.NewLayer(configJSON, OCIConfigMediaType)
	content := static.NewLayer(Archive(t, ch), OCIChartMediaType)
	for _, blob := range []v1.Layer{config, content} {
		if err := remote.WriteLayer(ref.Context(), blob, ropts...); err != nil {
			t.Fatalf("helmtest: push blob to %s: %v", ref.Context(), err)
		}
	}
	m := chartManifest(t, ch, config, content)
	if err := remote.Put(ref, m, ropts...); err != nil {
		t.Fatalf("helmtest: push manifest to %s: %v", ref, err)
	}
	return m.digest(t)
}

// chartManifest builds the image manifest of a chart.
func chartManifest(t testing.TB, ch *chart.Chart, config, content v1.Layer) rawManifest {
	t.Helper()
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        descriptor(t, config),
		Layers:        []v1.Descriptor{descriptor(t, content)},
		Annotations: map[string]string{
			"org.opencontainers.image.title":       ch.Name(),
			"org.opencontainers.image.version":     ch.Metadata.Version,
			"org.opencontainers.image.description": ch.Metadata.Description,
		},
	}
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("helmtest: manifest: %v", err)
	}
	return rawManifest(body)
}

// descriptor describes a blob.
func descriptor(t testing.TB, l v1.Layer) v1.Descriptor {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatalf("helmtest: digest: %v", err)
	}
	size, err := l.Size()
	if err != nil {
		t.Fatalf("helmtest: size: %v", err)
	}
	mt, err := l.MediaType()
	if err != nil {
		t.Fatalf("helmtest: media type: %v", err)
	}
	return v1.Descriptor{MediaType: mt, Size: size, Digest: d}
}

// rawManifest is a manifest that remote.Put can push as it is.
type rawManifest []byte

// RawManifest returns the manifest's bytes.
func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }

// MediaType returns the OCI image manifest media type.
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// digest returns "sha256:<hex>" of the manifest.
func (m rawManifest) digest(t testing.TB) string {
	t.Helper()
	h, _, err := v1.SHA256(strings.NewReader(string(m)))
	if err != nil {
		t.Fatalf("helmtest: manifest digest: %v", err)
	}
	return h.String()
}
