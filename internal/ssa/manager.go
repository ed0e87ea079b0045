package ssa

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultOwnerGroup prefixes the owner labels of objects that a
// Kustomization applies.
const DefaultOwnerGroup = "kustomize.toolkit.fluxcd.io"

// Defaults for the waits.
const (
	// DefaultWaitTimeout bounds each wait: stage 1 becoming ready, a
	// recreated object's deletion, prune's WaitForTermination.
	DefaultWaitTimeout = time.Minute
	// DefaultPollInterval is how often a wait looks again.
	DefaultPollInterval = 250 * time.Millisecond
)

// Owner names the object (a Kustomization, for instance) that owns the
// applied objects. Every applied object is labelled
// "<Group>/name: <Name>" and "<Group>/namespace: <Namespace>", and a prune
// deletes only objects that still carry both labels.
type Owner struct {
	// Group prefixes the label keys; DefaultOwnerGroup when empty.
	Group string
	// Name is the owner's name.
	Name string
	// Namespace is the owner's namespace.
	Namespace string
}

// Labels returns the owner labels.
func (o Owner) Labels() map[string]string {
	return map[string]string{
		o.NameLabel():            o.Name,
		o.group() + "/namespace": o.Namespace,
	}
}

// NameLabel returns the key of the owner label that holds its name.
func (o Owner) NameLabel() string {
	return o.group() + "/name"
}

// group returns the prefix of the label keys.
func (o Owner) group() string {
	if o.Group == "" {
		return DefaultOwnerGroup
	}
	return o.Group
}

// Options configure a Manager.
type Options struct {
	// FieldManager is the server-side apply field manager, such as
	// kustomize-controller. Required.
	FieldManager string
	// Owner labels every applied object. Its Name and Namespace are
	// required.
	Owner Owner
	// PollInterval is how often waits look again; DefaultPollInterval when
	// zero.
	PollInterval time.Duration
	// Versions, when set, tells the resourceVersion the objects have now,
	// from a watch of the cluster the client writes to: Verify then reads
	// only the objects whose version moved since the apply.
	Versions VersionReader
}

// VersionReader tells the resourceVersion an object has now. ok is false
// when it does not know (the kind is not watched yet, or the object is not
// seen): the caller reads the object instead. Watch starts watching a
// kind, without waiting: an apply asks it of every kind it applied, so
// that the watch holds them by the time a Verify asks.
type VersionReader interface {
	ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (version string, ok bool)
	Watch(ctx context.Context, gvk schema.GroupVersionKind)
}

// Manager applies, validates and prunes objects with server-side apply. It
// holds no state between calls and is safe for concurrent use when its
// client and mapper are.
type Manager struct {
	client       client.Client
	mapper       meta.RESTMapper
	fieldManager string
	owner        map[string]string
	pollInterval time.Duration
	versions     VersionReader
}

// New returns a Manager that talks to the cluster through c and resolves
// kinds with mapper, which should cache discovery (controller-runtime's
// dynamic mapper or client-go's deferred one): New never asks for discovery
// per call. A nil mapper means c.RESTMapper(). The client must be able to
// handle unstructured objects, which every controller-runtime client does.
func New(c client.Client, mapper meta.RESTMapper, opts Options) (*Manager, error) {
	if c == nil {
		return nil, errors.New("ssa: a client is required")
	}
	if opts.FieldManager == "" {
		return nil, errors.New("ssa: a field manager is required")
	}
	if opts.Owner.Name == "" || opts.Owner.Namespace == "" {
		return nil, errors.New("ssa: the owner's name and namespace are required")
	}
	if mapper == nil {
		mapper = c.RESTMapper()
	}
	if mapper == nil {
		return nil, errors.New("ssa: a REST mapper is required")
	}
	poll := opts.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	return &Manager{
		client:       c,
		mapper:       mapper,
		fieldManager: opts.FieldManager,
		owner:        opts.Owner.Labels(),
		pollInterval: poll,
		versions:     opts.Versions,
	}, nil
}

// FieldManager returns the field manager the Manager applies as.
func (m *Manager) FieldManager() string {
	return m.fieldManager
}

// owns reports whether obj carries the Manager's owner labels.
func (m *Manager) owns(obj *unstructured.Unstructured) bool {
	labels := obj.GetLabels()
	for k, v := range m.owner {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// resetMapper drops cached discovery, when the mappers can, so that kinds
// that just appeared are found.
func (m *Manager) resetMapper() {
	if r, ok := m.mapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
	// Mappers are not always comparable (MultiRESTMapper is a slice), so
	// the client's is reset even when it is the same one.
	if cm := m.client.RESTMapper(); cm != nil {
		if r, ok := cm.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
	}
}

// waitTimeout returns d, or DefaultWaitTimeout when d is not positive.
func waitTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultWaitTimeout
	}
	return d
}
