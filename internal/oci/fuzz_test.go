package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// fuzzRegistryHost is the registry of FuzzListTags, served in memory.
const fuzzRegistryHost = "registry.example"

// FuzzListTags lists the tags of a registry, served in memory, whose
// first tag list page is the fuzzed body first and every later page the
// fuzzed body rest (each followed, with tail, by blanks without end), and
// whose first pages-1 pages send the fuzzed Link header. It asserts that
// ListTags sends no request off the registry (another host, or plain
// HTTP) and never reads more than MaxTagPage bytes of an answer; and,
// when it succeeds, that it returns at most MaxTags tags: those of first,
// then those of rest once for each later page it read. A list over
// MaxTags must fail.
func FuzzListTags(f *testing.F) {
	const next = `</v2/app/tags/list?last=b>; rel="next"`
	many := make([]string, 500)
	for i := range many {
		many[i] = fmt.Sprintf(`"1.%d.0"`, i)
	}
	manyPage := []byte(`{"name":"app","tags":[` + strings.Join(many, ",") + `]}`)
	ab := []byte(`{"name":"app","tags":["a","b"]}`)
	f.Add([]byte(`{"name":"app","tags":["a","b","c"]}`), []byte(nil), "", uint8(1), false)
	f.Add(ab, []byte(`{"name":"app","tags":["c"]}`), next, uint8(3), false)
	f.Add([]byte(`{"name":"app","tags":["1.0.0","v2.0.0-rc.1"]}`), ab,
		`<https://`+fuzzRegistryHost+`/v2/app/tags/list?n=2&last=v2>; rel="next"`, uint8(2), true)
	f.Add([]byte(`{"name":"app","tags":[]}`), ab, next, uint8(2), false)
	f.Add([]byte(`{"name":"app","tags":null}`), []byte(nil), "", uint8(1), false)
	f.Add(ab, []byte(`{"name":"app","tags":["c"]`), next, uint8(2), false)
	f.Add([]byte(`{"name":"app","tags":["a"]} trailing`), []byte(nil), "", uint8(1), false)
	f.Add(ab, ab, `<http://`+fuzzRegistryHost+`/v2/app/tags/list>; rel="next"`, uint8(2), false)
	f.Add(ab, ab, `<https://elsewhere.example/v2/app/tags/list>; rel="next"`, uint8(2), false)
	f.Add([]byte(`not json`), []byte(nil), "", uint8(1), false)
	f.Add(manyPage, manyPage, next, uint8(201), false)
	f.Fuzz(func(t *testing.T, first, rest []byte, link string, pages uint8, tail bool) {
		reg := &fuzzRegistry{first: first, rest: rest, link: link, pages: int(pages), tail: tail}
		repo, err := name.NewRepository(fuzzRegistryHost + "/app")
		if err != nil {
			t.Fatal(err)
		}
		tags, err := ListTags(context.Background(), repo, Options{Keychain: authn.NewMultiKeychain(), Transport: reg})
		if reg.foreign != "" {
			t.Fatalf("ListTags requested %s, off the registry https://%s", reg.foreign, fuzzRegistryHost)
		}
		if reg.overread {
			t.Fatalf("ListTags read more than MaxTagPage (%d) bytes of one answer", MaxTagPage)
		}
		if err != nil {
			return
		}
		if len(tags) > MaxTags {
			t.Fatalf("ListTags returned %d tags, more than MaxTags", len(tags))
		}
		want := fuzzPageTags(t, first)
		if reg.served > 1 {
			restTags := fuzzPageTags(t, rest)
			for range reg.served - 1 {
				want = append(want, restTags...)
			}
		}
		if !slices.Equal(tags, want) {
			t.Fatalf("ListTags returned %d tags, want %d: the tags of the %d pages read", len(tags), len(want), reg.served)
		}
	})
}

// fuzzPageTags returns the tags of a page that ListTags accepted.
func fuzzPageTags(t *testing.T, page []byte) []string {
	t.Helper()
	var parsed struct {
		Tags []string `json:"tags"`
	}
	if err := json.NewDecoder(bytes.NewReader(page)).Decode(&parsed); err != nil {
		t.Fatalf("ListTags accepted a page that is not JSON: %v", err)
	}
	return parsed.Tags
}

// fuzzRegistry is an http.RoundTripper that serves a registry's tag list
// for FuzzListTags, and records what a client should not do.
type fuzzRegistry struct {
	first, rest []byte
	link        string
	pages       int
	tail        bool
	// served counts the tag list pages served.
	served int
	// foreign is the first URL requested off the registry.
	foreign string
	// overread is set when an answer was read past MaxTagPage bytes.
	overread bool
}

// RoundTrip implements http.RoundTripper.
func (r *fuzzRegistry) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == "" {
		return nil, fmt.Errorf("unsupported protocol scheme %q", req.URL.Scheme)
	}
	if req.URL.Scheme != "https" || req.URL.Host != fuzzRegistryHost {
		if r.foreign == "" {
			r.foreign = req.URL.String()
		}
		return nil, errors.New("off the registry")
	}
	header := http.Header{"Content-Type": {"application/json"}}
	if req.URL.Path == "/v2/" {
		return &http.Response{StatusCode: http.StatusOK, Header: header, Body: http.NoBody, Request: req}, nil
	}
	r.served++
	if r.served < r.pages && r.link != "" {
		header.Set("Link", r.link)
	}
	page := r.rest
	if r.served == 1 {
		page = r.first
	}
	var body io.Reader = bytes.NewReader(page)
	if r.tail {
		body = io.MultiReader(body, blanks{})
	}
	return &http.Response{StatusCode: http.StatusOK, Header: header, ContentLength: -1, Request: req,
		Body: io.NopCloser(&countingReader{r: body, registry: r})}, nil
}

// blanks is an endless stream of spaces.
type blanks struct{}

// Read implements io.Reader.
func (blanks) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// countingReader flags its registry when more than MaxTagPage+1 bytes
// (what a limit of MaxTagPage reads, with the probe of one more byte) are
// read, and ends the stream a little after.
type countingReader struct {
	r        io.Reader
	n        int64
	registry *fuzzRegistry
}

// Read implements io.Reader.
func (c *countingReader) Read(p []byte) (int, error) {
	if c.n > MaxTagPage+1<<16 {
		return 0, errors.New("the answer was read too far")
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > MaxTagPage+1 {
		c.registry.overread = true
	}
	return n, err
}

// FuzzManifest feeds an arbitrary body and Content-Type to the manifest
// parsing of GetManifest, then selects a layer of a fuzzed media type
// from what it accepts and checks it as OpenLayer would. It asserts that
// the digest is the body's sha256; that an accepted manifest starts with
// a JSON value and is neither an index nor schema 1; that SelectLayer returns the first layer
// (of the media type, when one is asked for) and fails only when there is
// none; and that checkLayer passes only a sha256 digest and a size within
// the limit.
func FuzzManifest(f *testing.F) {
	layer := `{"mediaType":"` + string(ContentMediaType) + `","size":1234,"digest":"sha256:` + strings.Repeat("ab", 32) + `"}`
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",` +
		`"config":{"mediaType":"` + string(ConfigMediaType) + `","size":2,"digest":"sha256:` + strings.Repeat("44", 32) + `"},` +
		`"layers":[` + layer + `,{"mediaType":"application/vnd.other","size":-1,"digest":"sha512:00"}],` +
		`"annotations":{"` + AnnotationRevision + `":"main@sha1:0123"}}`
	f.Add([]byte(manifest), "application/vnd.oci.image.manifest.v1+json", "")
	f.Add([]byte(manifest), "", string(ContentMediaType))
	f.Add([]byte(manifest), "", "application/vnd.other")
	f.Add([]byte(manifest), "", "application/vnd.missing")
	f.Add([]byte(`{"schemaVersion":2,"config":{},"layers":[]}`), "application/vnd.docker.distribution.manifest.v2+json; charset=utf-8", "")
	f.Add([]byte(`{"schemaVersion":2,"manifests":[]}`), "application/vnd.oci.image.index.v1+json", "")
	f.Add([]byte(`{"schemaVersion":1,"fsLayers":[]}`), "application/vnd.docker.distribution.manifest.v1+prettyjws", "")
	f.Add([]byte(`{"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json"}`), "", "")
	f.Add([]byte(`{"layers":[{"size":1,"digest":"sha256:zz"}]`), "", "")
	f.Add([]byte(`not json`), "text/plain", "")
	f.Fuzz(func(t *testing.T, body []byte, contentType, mediaType string) {
		raw := parseRawManifest(body, contentType)
		sum := sha256.Sum256(body)
		if raw.digest.Algorithm != "sha256" || raw.digest.Hex != hex.EncodeToString(sum[:]) {
			t.Fatalf("digest %s is not the body's sha256", raw.digest)
		}
		m, err := raw.imageManifest("oci://" + fuzzRegistryHost + "/app")
		if err != nil {
			return
		}
		switch {
		case m == nil:
			t.Fatal("imageManifest returned no manifest and no error")
		case raw.mediaType.IsIndex() || raw.hasManifests:
			t.Fatalf("accepted an index (media type %q)", raw.mediaType)
		case raw.mediaType.IsSchema1():
			t.Fatalf("accepted a schema 1 manifest (media type %q)", raw.mediaType)
		case json.NewDecoder(bytes.NewReader(body)).Decode(new(any)) != nil:
			t.Fatalf("accepted a manifest that does not start with JSON: %q", body)
		}

		l, err := SelectLayer(m, mediaType)
		first := -1
		for i, d := range m.Layers {
			if mediaType == "" || string(d.MediaType) == mediaType {
				first = i
				break
			}
		}
		if err != nil {
			if first >= 0 {
				t.Fatalf("SelectLayer(%q) failed, but layer %d matches: %v", mediaType, first, err)
			}
			return
		}
		if first < 0 || !reflect.DeepEqual(l, m.Layers[first]) {
			t.Fatalf("SelectLayer(%q) returned %+v, not the first matching layer (%d)", mediaType, l, first)
		}
		const limit = 1 << 20
		if checkLayer(l, limit) == nil {
			if l.Digest.Algorithm != "sha256" || len(l.Digest.Hex) != 64 || strings.Trim(l.Digest.Hex, "0123456789abcdef") != "" {
				t.Fatalf("checkLayer passed the digest %q", l.Digest)
			}
			if l.Size < 0 || l.Size > limit {
				t.Fatalf("checkLayer passed the size %d", l.Size)
			}
		}
	})
}

// FuzzSelectSemverTag selects a tag from fuzzed tags (one a line) by a
// fuzzed constraint and filter. It asserts the selection against the
// rules SelectSemverTag documents: the tag is one of those listed, a
// semantic version that satisfies the constraint and matches the filter,
// and no other such tag is higher (or equal and before it in byte order);
// and it fails only when the constraint or filter is invalid or no tag
// qualifies.
func FuzzSelectSemverTag(f *testing.F) {
	f.Add("1.0.0\nv1.2.0\n1.2.0\n2.0.0-rc.1\nlatest", ">=1.0.0 <2.0.0", "")
	f.Add("1.0.0\nv1.2.0\n1.2.0\n2.0.0-rc.1\nlatest", ">=2.0.0-0", "")
	f.Add("main-1.0.0\nmain-1.1.0\nfeature-2.0.0", "*", `^\d`)
	f.Add("1.0.0-alpha\n1.0.0-beta\n1.0.0", "~1.0.0-0", "alpha|beta")
	f.Add("1.0\n1\nv2", "^1", "")
	f.Add("1.0.0", "", "")
	f.Add("1.0.0", ">=x", "")
	f.Add("1.0.0", "*", "(")
	f.Fuzz(func(t *testing.T, list, constraint, filter string) {
		tags := strings.Split(list, "\n")
		got, err := SelectSemverTag(tags, constraint, filter)

		c, cerr := semver.NewConstraint(constraint)
		var re *regexp.Regexp
		var rerr error
		if filter != "" {
			re, rerr = regexp.Compile(filter)
		}
		valid := strings.TrimSpace(constraint) != "" && cerr == nil && rerr == nil
		qualifies := func(tag string) *semver.Version {
			if re != nil && !re.MatchString(tag) {
				return nil
			}
			v, err := semver.NewVersion(tag)
			if err != nil || !c.Check(v) {
				return nil
			}
			return v
		}
		if err != nil {
			if !valid {
				return
			}
			for _, tag := range tags {
				if qualifies(tag) != nil {
					t.Fatalf("SelectSemverTag failed, but %q qualifies: %v", tag, err)
				}
			}
			return
		}
		if !valid {
			t.Fatalf("SelectSemverTag accepted the constraint %q and filter %q", constraint, filter)
		}
		if !slices.Contains(tags, got) {
			t.Fatalf("SelectSemverTag returned %q, not a listed tag", got)
		}
		best := qualifies(got)
		if best == nil {
			t.Fatalf("SelectSemverTag returned %q, which does not qualify", got)
		}
		for _, tag := range tags {
			if v := qualifies(tag); v != nil && (v.GreaterThan(best) || (v.Equal(best) && tag < got)) {
				t.Fatalf("SelectSemverTag returned %q, but %q ranks higher", got, tag)
			}
		}
	})
}
