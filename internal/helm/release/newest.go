package release

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// SecretVersions tells the resourceVersion of release Secrets without a
// request (a versions.Cache of the Secrets labelled owner=helm).
type SecretVersions interface {
	// ResourceVersion returns the version of the object, when the watch of
	// its kind has synced and holds it.
	ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool)
	// Synced tells whether the watch of kind gvk holds every object it
	// selects, so that an object it does not hold does not exist.
	Synced(ctx context.Context, gvk schema.GroupVersionKind) bool
}

// ReleaseSecretsSelector selects the Secrets in which the SDK's Secrets
// driver stores releases, but those of superseded versions (most of any
// release's history): the newest version of a release is never
// superseded, nor is a version the moment it is stored, so that a watch
// of these still tells whether the newest version is unchanged and no
// next version exists, holding about one Secret per release.
const ReleaseSecretsSelector = "owner=helm,status!=superseded"

// DefaultNewestMaxBytes bounds what a NewestCache holds.
const DefaultNewestMaxBytes = 32 << 20

var secretKind = corev1.SchemeGroupVersion.WithKind("Secret")

// NewestCache remembers the newest release of each name as a Runner last
// read it from storage, with the resourceVersion of its Secret in that
// read, so that a reconcile that finds nothing new reads no release at
// all: the newest release is still the one remembered while the watch of
// release Secrets says its Secret is at that version and no next version
// exists. It keeps a summary (the chart's metadata, not its templates and
// files; no hooks), bounded in bytes; the Runners that share it must act
// on one cluster, the one the SecretVersions watch. It is safe for
// concurrent use.
type NewestCache struct {
	versions SecretVersions
	maxBytes int

	mu      sync.Mutex
	entries map[newestKey]newestEntry
	bytes   int
}

type newestKey struct{ scope, namespace, name string }

type newestEntry struct {
	summary *releasev1.Release
	// resourceVersion is its Secret's, in the read that returned it.
	resourceVersion string
	size            int
}

// WithNewestCache makes the Runner remember in c the newest release of
// each name it reads, and RecoverPending answer from c while it is still
// the newest. c must watch the cluster the Runner acts on. What a Runner
// remembers serves only the Runners of the same scope (the identity they
// act as): a release read with one identity's rights is never handed to
// another.
func WithNewestCache(c *NewestCache, scope string) Option {
	return func(r *Runner) { r.newest, r.newestScope = c, scope }
}

// NewNewestCache returns a cache validated by versions and bounded to
// maxBytes (DefaultNewestMaxBytes when not positive).
func NewNewestCache(versions SecretVersions, maxBytes int) *NewestCache {
	if maxBytes <= 0 {
		maxBytes = DefaultNewestMaxBytes
	}
	return &NewestCache{versions: versions, maxBytes: maxBytes, entries: map[newestKey]newestEntry{}}
}

// get returns a copy of the summary of the newest release name stored in
// namespace, when scope remembers it and it is still the newest.
func (c *NewestCache) get(ctx context.Context, scope, namespace, name string) (*releasev1.Release, bool) {
	key := newestKey{scope, namespace, name}
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || !c.versions.Synced(ctx, secretKind) {
		return nil, false
	}
	now, found := c.versions.ResourceVersion(ctx, secretKind, namespace, secretName(name, e.summary.Version))
	if !found || now != e.resourceVersion {
		return nil, false
	}
	if _, next := c.versions.ResourceVersion(ctx, secretKind, namespace, secretName(name, e.summary.Version+1)); next {
		return nil, false
	}
	return copySummary(e.summary), true
}

// put remembers for scope rel, read at resourceVersion, as the newest
// release of its name in namespace.
func (c *NewestCache) put(scope, namespace string, rel *releasev1.Release, resourceVersion string) {
	if rel == nil || resourceVersion == "" {
		return
	}
	if rel.Info != nil && rel.Info.Status.IsPending() {
		return // to be recovered, from a full read
	}
	summary := summarize(rel)
	size := len(summary.Manifest) + len(summary.Name) + len(summary.Namespace) + 1024
	if values, err := json.Marshal(summary.Config); err == nil {
		size += len(values)
	}
	if summary.Info != nil {
		size += len(summary.Info.Description) + len(summary.Info.Notes)
	}
	key := newestKey{scope, namespace, rel.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(key)
	if size > c.maxBytes {
		return
	}
	for k := range c.entries {
		if c.bytes+size <= c.maxBytes {
			break
		}
		c.dropLocked(k)
	}
	c.entries[key] = newestEntry{summary: summary, resourceVersion: resourceVersion, size: size}
	c.bytes += size
}

// forget drops the release name stored in namespace, for every scope.
func (c *NewestCache) forget(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.entries {
		if key.namespace == namespace && key.name == name {
			c.dropLocked(key)
		}
	}
}

func (c *NewestCache) dropLocked(key newestKey) {
	if e, ok := c.entries[key]; ok {
		c.bytes -= e.size
		delete(c.entries, key)
	}
}

// secretName is the name of the Secret that stores version of release
// name, as the SDK's Secrets driver names it.
func secretName(name string, version int) string {
	return fmt.Sprintf("%s.%s.v%d", storage.HelmStorageType, name, version)
}

// summarize returns what the cache keeps of rel: all but the chart's
// templates, files, values and dependencies, and the hooks.
func summarize(rel *releasev1.Release) *releasev1.Release {
	out := *rel
	out.Chart = nil
	if rel.Chart != nil {
		out.Chart = &chart.Chart{Metadata: rel.Chart.Metadata}
	}
	out.Hooks = nil
	return copySummary(&out)
}

// copySummary copies what a caller may change of a summary: its Info and
// labels.
func copySummary(rel *releasev1.Release) *releasev1.Release {
	out := *rel
	if rel.Info != nil {
		info := *rel.Info
		out.Info = &info
	}
	out.Labels = maps.Clone(rel.Labels)
	return &out
}

// recordingSecrets is the Secrets client of a Runner's storage that tells
// a NewestCache what it lists and writes: the resourceVersion of each
// release Secret listed or written, and the names of the releases it
// writes, which the cache forgets.
type recordingSecrets struct {
	typedcorev1.SecretInterface
	namespace string
	newest    *NewestCache
	mu        sync.Mutex
	listed    map[string]string
}

// List lists as the wrapped client and records the versions listed.
func (s *recordingSecrets) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	list, err := s.SecretInterface.List(ctx, opts)
	if err != nil {
		return list, err
	}
	for i := range list.Items {
		s.record(&list.Items[i])
	}
	return list, nil
}

// Create forgets the release, then creates as the wrapped client and
// records the version written.
func (s *recordingSecrets) Create(ctx context.Context, secret *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error) {
	s.forget(secret)
	created, err := s.SecretInterface.Create(ctx, secret, opts)
	if err == nil {
		s.record(created)
	}
	return created, err
}

// Update forgets the release, then updates as the wrapped client and
// records the version written.
func (s *recordingSecrets) Update(ctx context.Context, secret *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error) {
	s.forget(secret)
	updated, err := s.SecretInterface.Update(ctx, secret, opts)
	if err == nil {
		s.record(updated)
	}
	return updated, err
}

// record records the version of secret, as the API server answered it.
func (s *recordingSecrets) record(secret *corev1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listed == nil {
		s.listed = map[string]string{}
	}
	s.listed[secret.Name] = secret.ResourceVersion
}

// Delete forgets the release whose remembered newest version the Secret
// stores, then deletes as the wrapped client.
func (s *recordingSecrets) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	s.newest.forgetSecret(s.namespace, name)
	return s.SecretInterface.Delete(ctx, name, opts)
}

func (s *recordingSecrets) forget(secret *corev1.Secret) {
	if name := secret.Labels["name"]; name != "" {
		s.newest.forget(s.namespace, name)
		return
	}
	s.newest.forgetSecret(s.namespace, secret.Name)
}

// listedVersion returns the resourceVersion listed or written for the
// Secret of version of release name.
func (s *recordingSecrets) listedVersion(name string, version int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed[secretName(name, version)]
}

// forgetSecret forgets, for every scope, the release whose remembered
// version secret (a Secret's name) stores.
func (c *NewestCache) forgetSecret(namespace, secret string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, e := range c.entries {
		if key.namespace == namespace && secretName(key.name, e.summary.Version) == secret {
			c.dropLocked(key)
		}
	}
}
