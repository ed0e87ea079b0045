package shard

import (
	"context"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/windlass-dev/windlass/internal/metrics"
)

// The members share buckets, each recorded in a Lease of its own
// (BucketLeaseName) whose holder is the member that reconciles the
// bucket's objects. A bucket's Lease is never renewed: it is valid while
// its holder is a live member (its member Lease keeps changing), so that a
// member that goes loses its buckets when its own Lease expires, and the
// members the ring now assigns them to take them, one conditional write
// per bucket. A member hands a bucket over by writing the new holder on
// its Lease, once no run of the bucket's objects is under way here; the
// new holder starts only once it reads its name there. So a bucket, and
// each of its objects, is reconciled by one member at a time.

// buckets is what a member knows of the buckets it holds.
type buckets struct {
	// held are the buckets whose Lease names this member, as it last read
	// or wrote them.
	held map[int]bool
	// releasing are held buckets being handed over: no run of their
	// objects starts.
	releasing map[int]*release
	// runs counts the runs under way of each bucket's objects.
	runs map[int]int
	// lost are the buckets no longer held, whose objects the next balance
	// wakes: their runs forget what they remembered of them.
	lost map[int]bool
}

// release is the hand-over of a bucket under way.
type release struct {
	// drained is closed once no run of the bucket's objects is under way.
	drained chan struct{}
	// writing says that the new holder is being written: the hand-over
	// cannot be called off any more.
	writing bool
	// failed says that the write failed: the next balance tries again,
	// and until then no run of the bucket's objects starts.
	failed bool
}

func newBuckets() buckets {
	return buckets{held: map[int]bool{}, releasing: map[int]*release{}, runs: map[int]int{}, lost: map[int]bool{}}
}

// BucketLeaseName is the name of the Lease of bucket b of ring.
func BucketLeaseName(ring string, b int) string {
	return "windlass-bucket-" + ring + "-" + BucketValue(b)
}

// ReadBucketLease returns the bucket that lease records and its holder
// ("" for none), and false when it is not a bucket's Lease.
func ReadBucketLease(lease *coordinationv1.Lease) (bucket int, holder string, ok bool) {
	ring := lease.Labels[RingLabel]
	b, ok := ParseBucket(lease.Labels[BucketLabel])
	if !ok || ring == "" || lease.Name != BucketLeaseName(ring, b) {
		return 0, "", false
	}
	return b, ptr.Deref(lease.Spec.HolderIdentity, ""), true
}

// BucketHolders returns the holder of each bucket that leases, the Leases
// of one ring, record, leaving out the Leases that are no bucket's and the
// buckets that name no holder.
func BucketHolders(leases []coordinationv1.Lease) map[int]string {
	out := map[int]string{}
	for i := range leases {
		if b, holder, ok := ReadBucketLease(&leases[i]); ok && holder != "" {
			out[b] = holder
		}
	}
	return out
}

// OnHeld calls fn with the buckets this member holds, as values of
// BucketLabel, whenever they change (and once they are first known):
// the caches of the kinds cached by bucket select them. Call it before
// the member starts.
func (m *Member) OnHeld(fn func(values []string)) {
	m.onHeld = append(m.onHeld, fn)
}

// askBalance asks for the buckets to be balanced again soon.
func (m *Member) askBalance() {
	select {
	case m.balanceAsked <- struct{}{}:
	default:
	}
}

// balanceOnChange balances whenever asked.
func (m *Member) balanceOnChange(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.balanceAsked:
			m.balance(ctx)
		}
	}
}

// balance makes the buckets' holders follow the ring: it takes the
// buckets assigned to this member that no live member holds, and hands
// over those it holds that the ring assigns to another.
func (m *Member) balance(ctx context.Context) {
	m.mu.Lock()
	ring, assignment, store := m.ring, m.assignment, m.leaseStore
	m.mu.Unlock()
	if store == nil || !ring.Has(m.opts.Name) {
		return
	}
	leases := m.bucketLeases(store.List())
	var gained []int
	renewing := map[string]bool{}
	for b := range Buckets {
		lease := leases[b]
		holder := ""
		if lease != nil {
			holder = ptr.Deref(lease.Spec.HolderIdentity, "")
		}
		switch owner := assignment.Owner(b); {
		case owner == m.opts.Name && holder == m.opts.Name:
			if m.keep(b) {
				gained = append(gained, b)
			}
		case owner == m.opts.Name && !ring.Has(holder):
			if holder != "" && m.stillRenewing(ctx, holder, renewing) {
				continue
			}
			if m.take(ctx, b, lease, holder) {
				gained = append(gained, b)
			}
		case owner != m.opts.Name && holder == m.opts.Name && ring.Has(owner):
			m.handOver(ctx, b, lease, owner)
		case holder != m.opts.Name:
			m.lose(b)
		}
	}
	m.heldChanged(ctx, gained)
}

// bucketLeases returns the Leases of the ring's buckets among leases, by
// bucket.
func (m *Member) bucketLeases(leases []any) map[int]*coordinationv1.Lease {
	out := map[int]*coordinationv1.Lease{}
	for _, o := range leases {
		lease, ok := o.(*coordinationv1.Lease)
		if !ok || lease.Labels[RingLabel] != m.opts.Ring {
			continue
		}
		if b, _, ok := ReadBucketLease(lease); ok {
			out[b] = lease
		}
	}
	return out
}

// keep records b, whose Lease names this member, as held (a member
// restarted under its name finds its buckets so), and calls off its
// hand-over unless the new holder is being written; it tells whether b's
// objects are to be woken: b was not held before, or its hand-over was
// called off (while it lasted, their changes passed this member by and
// their runs ended without running).
func (m *Member) keep(b int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	calledOff := false
	if r, ok := m.buckets.releasing[b]; ok {
		if r.writing {
			return false
		}
		delete(m.buckets.releasing, b)
		closeOnce(r.drained)
		calledOff = true
	}
	if m.buckets.held[b] && !calledOff {
		return false
	}
	m.buckets.held[b] = true
	return true
}

// lose forgets b, which another member holds.
func (m *Member) lose(b int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets.held[b] {
		m.buckets.lost[b] = true
	}
	delete(m.buckets.held, b)
	if r, ok := m.buckets.releasing[b]; ok {
		delete(m.buckets.releasing, b)
		closeOnce(r.drained)
	}
}

// stillRenewing reports whether the Lease of holder, a member this one
// counts gone, changed since this member last saw it change, as the API
// server has it now: a member whose watch of the Leases fell behind would
// otherwise take the buckets of a live one. A change found is recorded, so
// that the ring counts holder live again for its duration; a read that
// fails counts as one (the next balance looks again). renewing remembers
// the answers of one balance.
func (m *Member) stillRenewing(ctx context.Context, holder string, renewing map[string]bool) bool {
	if answer, ok := renewing[holder]; ok {
		return answer
	}
	answer := m.readRenewing(ctx, holder)
	renewing[holder] = answer
	if answer {
		ctrl.LoggerFrom(ctx).Info("A shard member counted gone still renews its lease: its buckets are left to it", "holder", holder)
		m.poke()
	}
	return answer
}

// readRenewing reads the Lease of member from the API server: see
// stillRenewing.
func (m *Member) readRenewing(ctx context.Context, member string) bool {
	lease, err := m.leases.cs.CoordinationV1().Leases(m.leases.namespace).Get(ctx, leaseName(member), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the shard lease of a member counted gone", "holder", member)
		return true
	}
	read, ok := ReadLease(lease)
	if !ok {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if seen, known := m.seen[member]; known && seen.resourceVersion == lease.ResourceVersion {
		return false
	}
	m.seen[member] = observation{resourceVersion: lease.ResourceVersion, at: time.Now(), duration: read.Duration}
	return true
}

// take writes this member as the holder of b, on condition that its Lease
// (lease, nil when there is none) did not change since it was read, and
// tells whether it did; from is the member that held it.
func (m *Member) take(ctx context.Context, b int, lease *coordinationv1.Lease, from string) bool {
	leases := m.leases.cs.CoordinationV1().Leases(m.leases.namespace)
	now := metav1.NewMicroTime(time.Now())
	var err error
	if lease == nil {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: BucketLeaseName(m.opts.Ring, b), Namespace: m.leases.namespace,
				Labels: map[string]string{RingLabel: m.opts.Ring, BucketLabel: BucketValue(b)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(m.opts.Name), AcquireTime: &now},
		}, metav1.CreateOptions{})
	} else {
		lease = lease.DeepCopy()
		lease.Spec.HolderIdentity = ptr.To(m.opts.Name)
		lease.Spec.AcquireTime = &now
		lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			ctrl.LoggerFrom(ctx).Error(err, "Taking a shard bucket", "shardBucket", b)
		}
		return false
	}
	metrics.ShardBucketMoves.WithLabelValues("claimed").Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Took a shard bucket", "shardBucket", b, "from", from)
	return m.keep(b)
}

// handOver hands b over to the member to, once no run of its objects is
// under way here: it stops new runs at once, and writes the new holder
// when the last run ends, on condition that the Lease (lease) did not
// change since it was read. It does not wait: a bucket being handed over
// is left alone until then.
func (m *Member) handOver(ctx context.Context, b int, lease *coordinationv1.Lease, to string) {
	m.mu.Lock()
	if r, ok := m.buckets.releasing[b]; ok && !r.failed {
		m.mu.Unlock()
		return
	}
	r := &release{drained: make(chan struct{})}
	m.buckets.releasing[b] = r
	if m.buckets.runs[b] == 0 {
		close(r.drained)
	}
	m.mu.Unlock()
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-r.drained:
		}
		m.writeHandOver(ctx, b, r, lease, to)
	}()
}

// writeHandOver writes to as the holder of b, unless the member called
// the hand-over r off meanwhile.
func (m *Member) writeHandOver(ctx context.Context, b int, r *release, lease *coordinationv1.Lease, to string) {
	m.mu.Lock()
	still := m.buckets.releasing[b] == r
	r.writing = still
	m.mu.Unlock()
	if !still {
		return
	}
	lease = lease.DeepCopy()
	lease.Spec.HolderIdentity = ptr.To(to)
	lease.Spec.AcquireTime = ptr.To(metav1.NewMicroTime(time.Now()))
	lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	_, err := m.leases.cs.CoordinationV1().Leases(m.leases.namespace).Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		// The Lease changed, or the write failed: the next balance (within
		// a second) looks again at what the Lease says, and no run starts
		// until then.
		m.mu.Lock()
		r.writing, r.failed = false, true
		m.mu.Unlock()
		if !apierrors.IsConflict(err) {
			ctrl.LoggerFrom(ctx).Error(err, "Handing over a shard bucket", "shardBucket", b, "to", to)
		}
		return
	}
	m.lose(b)
	metrics.ShardBucketMoves.WithLabelValues("handed_over").Inc()
	ctrl.LoggerFrom(ctx).V(1).Info("Handed over a shard bucket", "shardBucket", b, "to", to)
	// The next balance, within a second, tells the buckets held: the
	// hand-overs of one change of the ring are told at once, and each
	// change of what the caches select lists their objects again.
	m.askBalance()
}

// heldChanged wakes the objects of the buckets lost, before the caches
// drop them, so that their runs forget what this member remembered of
// them; tells the OnHeld functions the buckets held now, when they changed
// since they were last told; and wakes the objects of the buckets gained.
func (m *Member) heldChanged(ctx context.Context, gained []int) {
	m.wake(ctx, m.takeLost())
	values := m.heldValues()
	metrics.ShardBuckets.Set(float64(len(values)))
	if m.told == nil || !slices.Equal(values, m.told) {
		m.told = values
		for _, fn := range m.onHeld {
			fn(values)
		}
	}
	if len(gained) > 0 {
		m.unlabelled.requeueAll()
	}
	m.wake(ctx, gained)
}

// takeLost returns the buckets lost since the last call.
func (m *Member) takeLost() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, 0, len(m.buckets.lost))
	for b := range m.buckets.lost {
		if !m.buckets.held[b] {
			out = append(out, b)
		}
	}
	clear(m.buckets.lost)
	return out
}

// heldValues returns the buckets held, as values of BucketLabel.
func (m *Member) heldValues() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.buckets.held))
	for b := range m.buckets.held {
		out = append(out, BucketValue(b))
	}
	slices.Sort(out)
	return out
}

// hold registers a run of an object of bucket b, when this member
// reconciles b's objects (see reconciles); the run calls the returned
// function when it ends. It returns nil otherwise.
func (m *Member) hold(b int) func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciles(b) {
		return nil
	}
	m.buckets.runs[b]++
	done := false
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if done {
			return
		}
		done = true
		if m.buckets.runs[b]--; m.buckets.runs[b] == 0 {
			delete(m.buckets.runs, b)
			if r, ok := m.buckets.releasing[b]; ok {
				closeOnce(r.drained)
			}
		}
	}
}

// holdsBucket reports whether this member reconciles the objects of b
// (see reconciles).
func (m *Member) holdsBucket(b int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reconciles(b)
}

// reconciles reports whether this member holds b, is not handing it over,
// and renewed its Lease within the renew deadline: past it the others may
// count the member gone, and it stops at its next tick (see Start). Called
// with mu held.
func (m *Member) reconciles(b int) bool {
	_, releasing := m.buckets.releasing[b]
	return m.buckets.held[b] && !releasing && time.Since(m.renewed) <= m.renewDeadline()
}

// HolderOfBucket returns the member whose name bucket b's Lease holds, ""
// when none does or it is not known.
func (m *Member) HolderOfBucket(b int) string {
	m.mu.Lock()
	store := m.leaseStore
	m.mu.Unlock()
	if store == nil {
		return ""
	}
	o, ok, err := store.GetByKey(m.leases.namespace + "/" + BucketLeaseName(m.opts.Ring, b))
	if err != nil || !ok {
		return ""
	}
	return ptr.Deref(o.(*coordinationv1.Lease).Spec.HolderIdentity, "")
}

// closeOnce closes ch unless it is closed.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
