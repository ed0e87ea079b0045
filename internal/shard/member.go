package shard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// Options configure a Member.
type Options struct {
	// Name is the member's name: a label value (the pod's name, say).
	Name string
	// Ring names the ring: the replicas that run the same controllers.
	Ring string
	// Namespace holds the members' Leases.
	Namespace string
	// By is what objects are hashed by.
	By By
	// LeaseDuration is how long a member that stopped renewing its Lease
	// still counts as live; it renews every fifth of it, and gives up (see
	// OnLost) when it could not for two thirds of it, before the others
	// take its objects.
	LeaseDuration time.Duration
	// OnLost is called when the member could not renew its Lease in time:
	// it must stop reconciling at once. Nil logs and exits the process.
	OnLost func()
	// Kinds are the kinds whose objects the member holds.
	Kinds []kinds.Kind
	// Selector, when not empty, is the --watch-label-selector: only the
	// objects it selects are shared.
	Selector labels.Selector
	// WatchNamespace, when not empty, is the one namespace watched.
	WatchNamespace string
	// Addresses are the base URLs of what this member serves, by name
	// (image-tags, say), published on its Lease for the others (AddressOf).
	Addresses map[string]string
}

// Member is one replica's membership of the ring: it keeps its Lease,
// follows the others', and holds the buckets the ring assigns to it (see
// holding.go): it takes those that nobody holds, or that a member no
// longer live held, and hands over those the ring gives to another member
// once no run of their objects is under way. It labels the objects that
// have no bucket yet with theirs (see labels.go). It is a manager runnable
// that every replica runs.
type Member struct {
	opts   Options
	leases kubernetesLeases
	md     metadata.Interface
	cache  client.Reader
	mapper apimeta.RESTMapper

	mu         sync.Mutex
	ring       Ring
	assignment Assignment
	ready      bool
	seen       map[string]observation
	buckets    buckets
	subs       map[string]chan event.GenericEvent
	resource   map[string]schema.GroupVersionResource
	onHeld     []func(values []string)
	// told are the buckets last told to onHeld (nil: none told yet); only
	// the balance loop reads and writes it.
	told []string

	// changed is poked when a Lease changes; balanceAsked when the ring
	// or a bucket's Lease does.
	changed, balanceAsked chan struct{}
	unlabelled            *labelQueue
	// leases holds the members' and the buckets' Leases, once Start
	// watches them.
	leaseStore cache.Store
	// process tells this process's writes of the member's Lease from
	// those of another process started with the same name; wrote says
	// that this process wrote it once.
	process string
	wrote   bool
	// renewed is when the last renewal of the member's Lease that
	// succeeded started: the others count it live for its duration from
	// no earlier than that.
	renewed time.Time
}

// observation is when a member's Lease was last seen to change.
type observation struct {
	resourceVersion string
	at              time.Time
	duration        time.Duration
}

// kubernetesLeases is the Lease client of the members' namespace.
type kubernetesLeases struct {
	cs        kubernetes.Interface
	namespace string
}

// NewMember returns the member opts describes, reaching the API server
// through cfg; cache is the manager's cache, in which the member lists the
// objects it holds, and mapper names their resources.
func NewMember(cfg *rest.Config, cache client.Reader, mapper apimeta.RESTMapper, opts Options) (*Member, error) {
	if err := CheckMemberName(opts.Name); err != nil {
		return nil, err
	}
	if opts.LeaseDuration <= 0 {
		return nil, errors.New("the shard lease duration must be positive")
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	m := &Member{
		opts: opts, leases: kubernetesLeases{cs: cs, namespace: opts.Namespace}, md: md, cache: cache, mapper: mapper,
		seen: map[string]observation{}, buckets: newBuckets(), subs: map[string]chan event.GenericEvent{},
		resource: map[string]schema.GroupVersionResource{}, changed: make(chan struct{}, 1), balanceAsked: make(chan struct{}, 1),
	}
	m.unlabelled = newLabelQueue()
	m.process = rand.Text()
	for _, k := range opts.Kinds {
		m.subs[k.Kind] = make(chan event.GenericEvent, 1024)
	}
	return m, nil
}

// Name returns the member's name.
func (m *Member) Name() string { return m.opts.Name }

// Ring returns the live members as this member sees them.
func (m *Member) Ring() Ring {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ring
}

// NeedLeaderElection is false: every replica is a member.
func (m *Member) NeedLeaderElection() bool { return false }

// renewEvery is how often the member renews its Lease.
func (m *Member) renewEvery() time.Duration { return m.opts.LeaseDuration / 5 }

// renewDeadline is how long renewals may fail before the member gives up.
func (m *Member) renewDeadline() time.Duration { return m.opts.LeaseDuration * 2 / 3 }

// Start keeps the member's Lease and follows the ring until ctx is done.
func (m *Member) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("member", m.opts.Name, "ring", m.opts.Ring)
	ctx = ctrl.LoggerInto(ctx, log)
	if err := m.renew(ctx); err != nil {
		return fmt.Errorf("joining the shard ring: %w", err)
	}
	leaseInformer, err := m.watchLeases(ctx)
	if err != nil {
		return err
	}
	if !cache.WaitForCacheSync(ctx.Done(), leaseInformer.HasSynced) {
		return ctx.Err()
	}
	m.mu.Lock()
	m.leaseStore = leaseInformer.GetStore()
	m.mu.Unlock()
	if err := m.unlabelled.watch(ctx, m); err != nil {
		return err
	}
	// The renew deadline runs from here, before the member holds anything:
	// the watches above may have taken longer than it.
	if err := m.renewAndRecord(ctx); err != nil {
		return fmt.Errorf("joining the shard ring: %w", err)
	}
	go m.runLabels(ctx)
	go m.balanceOnChange(ctx)
	go m.follow(ctx, leaseInformer.GetStore())
	m.observe(ctx, leaseInformer.GetStore())
	renew := time.NewTicker(m.renewEvery())
	defer renew.Stop()
	look := time.NewTimer(m.untilNextLook(time.Now()))
	defer look.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-renew.C:
			// A member past its renew deadline stops, even if its Lease
			// could still be renewed (a process paused, frozen or starved
			// for that long would renew it as if nothing had happened): the
			// others may have taken its buckets, and it has reconciled
			// nothing and passed no event by since (see reconciles).
			if since := m.sinceRenewed(); since > m.renewDeadline() {
				m.lost(ctx)
				return fmt.Errorf("%w: not renewed for %s", errLapsed, since.Round(time.Second))
			}
			if err := m.renewAndRecord(ctx); err != nil {
				log.Error(err, "Renewing the shard lease")
				if errors.Is(err, errSameName) || errors.Is(err, errLapsed) {
					m.lost(ctx)
					return err
				}
				continue
			}
		case <-look.C:
			m.observe(ctx, leaseInformer.GetStore())
			look.Reset(m.untilNextLook(time.Now()))
		}
	}
}

// expiry returns when the member whose Lease was last seen to change as
// seen stops being live, by this member's clock: its Lease's duration (at
// least this member's) after the change.
func (m *Member) expiry(seen observation) time.Time {
	return seen.at.Add(max(seen.duration, m.opts.LeaseDuration))
}

// maxLookInterval is the longest a member goes without looking at the
// Leases: a changed Lease is seen as it changes (follow), a Lease that
// stops changing when it expires (untilNextLook), and this bounds the rest.
const maxLookInterval = time.Second

// untilNextLook returns how long after now the member looks at the Leases
// again: when the first of the other members' Leases expires by this
// member's clock, unless maxLookInterval comes first. A member that dies
// thus loses its buckets as its Lease expires, not up to a second later.
func (m *Member) untilNextLook(now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := maxLookInterval
	for name, seen := range m.seen {
		if name == m.opts.Name {
			continue
		}
		// Live before its expiry: just after it, not.
		if until := m.expiry(seen).Sub(now) + time.Millisecond; until > 0 && until < next {
			next = until
		}
	}
	return next
}

// lost stops the member's reconciling: the others take its objects once
// its Lease expires.
func (m *Member) lost(ctx context.Context) {
	ctrl.LoggerFrom(ctx).Info("Lost the shard lease: stopping, the other members take the objects")
	if m.opts.OnLost != nil {
		m.opts.OnLost()
		return
	}
	os.Exit(1)
}

// renewAndRecord renews the member's Lease, and records when a renewal
// that succeeded started. It returns errLapsed for a renewal that ended
// past the renew deadline of the last one (the member lapsed meanwhile).
func (m *Member) renewAndRecord(ctx context.Context) error {
	start := time.Now()
	if err := m.renew(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if since := time.Since(m.renewed); !m.renewed.IsZero() && since > m.renewDeadline() {
		return fmt.Errorf("%w: renewed %s after the last renewal", errLapsed, since.Round(time.Second))
	}
	m.renewed = start
	return nil
}

// errLapsed is the error of a member whose Lease went unrenewed for longer
// than its renew deadline: the others may have taken its buckets, and it
// reconciled nothing and dropped its objects' events meanwhile (see
// reconciles), so it stops.
var errLapsed = errors.New("the shard lease lapsed")

// sinceRenewed returns how long ago the last renewal of the member's
// Lease that succeeded started.
func (m *Member) sinceRenewed() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return time.Since(m.renewed)
}

// errSameName is the error of a member whose Lease another process wrote:
// two replicas run with one --shard-name, and both would reconcile the
// objects of that name.
var errSameName = errors.New("another process renews this member's shard lease: give each replica its own --shard-name")

// processAnnotation records, on a member's Lease, the process that last
// wrote it.
const processAnnotation = "process.shard.windlass.dev/id"

// renew creates or renews the member's Lease. A renewal may take half the
// time the member has before it gives up: a busy API server answers late,
// and the next tick tries again. A Lease that another process wrote since
// this one first did is not renewed (errSameName); one left by an earlier
// process of the member (restarted before its Lease expired) is.
func (m *Member) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.renewDeadline()/2)
	defer cancel()
	leases := m.leases.cs.CoordinationV1().Leases(m.leases.namespace)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, leaseName(m.opts.Name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: leaseName(m.opts.Name), Namespace: m.leases.namespace,
				Labels: map[string]string{RingLabel: m.opts.Ring}, Annotations: m.addressAnnotations()},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(m.opts.Name), AcquireTime: &now, RenewTime: &now,
				LeaseDurationSeconds: ptr.To(int32(m.opts.LeaseDuration / time.Second))},
		}, metav1.CreateOptions{})
		m.wrote = m.wrote || err == nil
		return err
	}
	if err != nil {
		return err
	}
	if m.wrote && lease.Annotations[processAnnotation] != m.process {
		return errSameName
	}
	lease.Annotations = m.addressAnnotations()
	lease.Spec.RenewTime = &now
	lease.Spec.HolderIdentity = ptr.To(m.opts.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(m.opts.LeaseDuration / time.Second))
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	m.wrote = m.wrote || err == nil
	return err
}

// Leave deletes the member's Lease, so that the others take its objects
// at once: call it after the manager stopped, when no reconcile runs.
func (m *Member) Leave(ctx context.Context) error {
	err := m.leases.cs.CoordinationV1().Leases(m.leases.namespace).Delete(ctx, leaseName(m.opts.Name), metav1.DeleteOptions{})
	return client.IgnoreNotFound(err)
}

// watchLeases starts the informer of the ring's Leases.
func (m *Member) watchLeases(ctx context.Context) (cache.SharedIndexInformer, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(m.leases.cs, 0,
		informers.WithNamespace(m.leases.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = RingLabel + "=" + m.opts.Ring }))
	inf := factory.Coordination().V1().Leases().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.poke() },
		UpdateFunc: func(any, any) { m.poke() },
		DeleteFunc: func(any) { m.poke() },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	return inf, nil
}

// poke asks for the Leases to be looked at again soon.
func (m *Member) poke() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// observe works out the live members from the Leases in store: a member
// is live while its Lease changed less than its duration ago, as this
// member's clock measures it (no two clocks are compared). This member is
// live while it runs.
func (m *Member) observe(ctx context.Context, store cache.Store) {
	now := time.Now()
	m.mu.Lock()
	live := m.liveMembers(store.List(), now)
	ring := NewRing(live...)
	metrics.ShardMembers.Set(float64(len(ring.Members())))
	changed := !m.ready || !ring.Equal(m.ring)
	if changed {
		m.assignment = ring.Assign()
	}
	m.ring, m.ready = ring, true
	m.mu.Unlock()
	if changed {
		ctrl.LoggerFrom(ctx).Info("Shard ring", "members", ring.Members())
	}
	// A bucket's Lease may have changed too: balance whenever a Lease did.
	m.askBalance()
}

// liveMembers returns this member and those whose Lease, among leases,
// changed less than its duration ago by this member's clock, recording
// when each changed last. Called with mu held.
func (m *Member) liveMembers(leases []any, now time.Time) []string {
	live := []string{m.opts.Name}
	present := map[string]bool{}
	for _, o := range leases {
		lease := o.(*coordinationv1.Lease)
		member, ok := ReadLease(lease)
		if !ok {
			continue
		}
		present[member.Member] = true
		seen, known := m.seen[member.Member]
		if !known || seen.resourceVersion != lease.ResourceVersion {
			seen = observation{resourceVersion: lease.ResourceVersion, at: now, duration: member.Duration}
			m.seen[member.Member] = seen
		}
		if member.Member != m.opts.Name && now.Before(m.expiry(seen)) {
			live = append(live, member.Member)
		}
	}
	for name := range m.seen {
		if !present[name] {
			delete(m.seen, name)
		}
	}
	return live
}

// follow observes the Leases in store whenever they change, between the
// ticks of Start that see Leases expire.
func (m *Member) follow(ctx context.Context, store cache.Store) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.changed:
			m.observe(ctx, store)
		}
	}
}

// addressPrefix starts the annotations of a member's Lease that hold its
// addresses.
const addressPrefix = "address.shard.windlass.dev/"

// addressAnnotations are the annotations of the member's Lease: its
// addresses and its process.
func (m *Member) addressAnnotations() map[string]string {
	out := make(map[string]string, len(m.opts.Addresses)+1)
	out[processAnnotation] = m.process
	for name, addr := range m.opts.Addresses {
		out[addressPrefix+name] = addr
	}
	return out
}

// AddressOf returns the base URL that member published as name, "" when
// it published none or is not known.
func (m *Member) AddressOf(member, name string) string {
	m.mu.Lock()
	store := m.leaseStore
	m.mu.Unlock()
	if store == nil {
		return ""
	}
	o, ok, err := store.GetByKey(m.leases.namespace + "/" + leaseName(member))
	if err != nil || !ok {
		return ""
	}
	return o.(*coordinationv1.Lease).Annotations[addressPrefix+name]
}
