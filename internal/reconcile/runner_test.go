package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/conditions/check"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/metrics"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
)

// testKind is a GitRepository kind whose run is given by the test.
func testKind(run func(context.Context, *sourcev1.GitRepository) (outcome.Result, error)) Kind[*sourcev1.GitRepository] {
	return Kind[*sourcev1.GitRepository]{
		Name:               sourcev1.GitRepositoryKind,
		New:                func() *sourcev1.GitRepository { return &sourcev1.GitRepository{} },
		NegativeConditions: []string{sourcev1.FetchFailedCondition},
		SuccessReason:      meta.SucceededReason,
		SuccessMessage:     func(*sourcev1.GitRepository) string { return "done" },
		Run: func(ctx context.Context, obj *sourcev1.GitRepository, _ *patch.Helper) (outcome.Result, error) {
			return run(ctx, obj)
		},
	}
}

func newRepo() *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "repo", Generation: 1},
		Spec:       sourcev1.GitRepositorySpec{Interval: metav1.Duration{Duration: time.Hour}},
	}
}

func TestRunner(t *testing.T) {
	failure := outcome.Fail(sourcev1.GitOperationFailedReason, errors.New("host down"))
	tests := []struct {
		name          string
		mutate        func(obj *sourcev1.GitRepository)
		run           func(context.Context, *sourcev1.GitRepository) (outcome.Result, error)
		retryInterval time.Duration
		wantRan       bool
		wantErr       bool
		wantTerminal  bool
		wantRequeue   [2]time.Duration
		wantReady     string
		wantReason    string
		wantWarning   bool
	}{
		{
			name: "success is Ready and comes back after the interval",
			run: func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
				return outcome.ResultSuccess, nil
			},
			wantRan:     true,
			wantRequeue: [2]time.Duration{55 * time.Minute, 65 * time.Minute},
			wantReady:   "True", wantReason: meta.SucceededReason,
		},
		{
			name: "a failure is retried with backoff: an error and no RequeueAfter",
			run: func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
				return outcome.ResultEmpty, failure
			},
			wantRan:   true,
			wantErr:   true,
			wantReady: "False", wantReason: sourcev1.GitOperationFailedReason,
		},
		{
			name: "a kind with a retry interval retries after it, without error",
			run: func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
				return outcome.ResultEmpty, failure
			},
			retryInterval: 2 * time.Minute,
			wantRan:       true,
			wantRequeue:   [2]time.Duration{2 * time.Minute, 2 * time.Minute},
			wantReady:     "False", wantReason: sourcev1.GitOperationFailedReason,
		},
		{
			name: "a failure with its own retry delay is retried after it, and recorded",
			run: func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
				return outcome.ResultEmpty, outcome.FailRetryAfter("UpgradeFailed", errors.New("upgrade failed"), 5*time.Second)
			},
			retryInterval: 2 * time.Minute,
			wantRan:       true,
			wantRequeue:   [2]time.Duration{5 * time.Second, 5 * time.Second},
			wantReady:     "False", wantReason: "UpgradeFailed",
			wantWarning: true,
		},
		{
			name: "a stall is terminal, even with a retry interval",
			run: func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
				return outcome.ResultEmpty, outcome.Stall("InvalidURL", errors.New("bad"))
			},
			retryInterval: 2 * time.Minute,
			wantRan:       true,
			wantErr:       true,
			wantTerminal:  true,
			wantReady:     "False", wantReason: "InvalidURL",
		},
		{
			name: "a panic fails the object, which is retried with backoff",
			run: func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
				panic("nil map in a tenant's object")
			},
			wantRan:   true,
			wantErr:   true,
			wantReady: "False", wantReason: meta.FailedReason,
		},
		{
			name:   "a suspended object does not run",
			mutate: func(obj *sourcev1.GitRepository) { obj.Spec.Suspend = true },
			run: func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
				return outcome.ResultSuccess, nil
			},
			wantRan: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			obj := newRepo()
			if tt.mutate != nil {
				tt.mutate(obj)
			}
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj).
				WithStatusSubresource(&sourcev1.GitRepository{}).Build()
			ran := false
			kind := testKind(func(ctx context.Context, o *sourcev1.GitRepository) (outcome.Result, error) {
				ran = true
				return tt.run(ctx, o)
			})
			if tt.retryInterval != 0 {
				kind.RetryInterval = func(*sourcev1.GitRepository) time.Duration { return max(tt.retryInterval, 0) }
			}
			sink := &recordedEvents{}
			r := &Runner[*sourcev1.GitRepository]{Client: c, Kind: kind, Events: &event.Recorder{Sink: sink}}
			res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			g.Expect(ran).To(Equal(tt.wantRan))
			g.Expect(err != nil).To(Equal(tt.wantErr), "error: %v", err)
			g.Expect(IsTerminal(err)).To(Equal(tt.wantTerminal))
			g.Expect(res.RequeueAfter).To(BeNumerically(">=", tt.wantRequeue[0]))
			g.Expect(res.RequeueAfter).To(BeNumerically("<=", tt.wantRequeue[1]))
			g.Expect(res.Priority).To(Equal(ptr.To(NormalPriority)))
			if tt.wantWarning || tt.wantErr {
				g.Expect(sink.events).To(ContainElement(HaveField("Type", event.TypeWarning)), "a failure is recorded")
			}

			stored := &sourcev1.GitRepository{}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
			g.Expect(stored.Finalizers).To(BeEmpty(), "a source carries no finalizer")
			if !tt.wantRan {
				g.Expect(conditions.Get(stored, meta.ReadyCondition)).To(BeNil())
				return
			}
			g.Expect(string(conditions.Get(stored, meta.ReadyCondition).Status)).To(Equal(tt.wantReady))
			g.Expect(conditions.Reason(stored, meta.ReadyCondition)).To(Equal(tt.wantReason))
			if tt.wantReason == meta.FailedReason {
				g.Expect(conditions.Message(stored, meta.ReadyCondition)).To(Equal("reconciliation panicked: nil map in a tenant's object"))
			}
			g.Expect(check.Status(stored, kind.NegativeConditions...)).To(Succeed())
		})
	}
}

func TestRunnerFinalizesAndForgets(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := newRepo()
	obj.Finalizers = []string{meta.Finalizer}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj).Build()
	g.Expect(c.Delete(ctx, obj.DeepCopy())).To(Succeed())

	var finalized int
	var forgotten []types.NamespacedName
	finalizeErr := errors.New("storage read-only")
	kind := testKind(func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
		t.Fatal("a deleted object does not run")
		return outcome.ResultEmpty, nil
	})
	kind.Finalize = func(context.Context, *sourcev1.GitRepository) error {
		finalized++
		return finalizeErr
	}
	kind.Forget = func(key types.NamespacedName) { forgotten = append(forgotten, key) }
	var gone []types.NamespacedName
	kind.Gone = func(_ context.Context, key types.NamespacedName) { gone = append(gone, key) }
	r := &Runner[*sourcev1.GitRepository]{Client: c, Kind: kind}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	// The series of the object's life before its deletion.
	metrics.RecordDuration(kind.Name, obj, time.Now())
	metrics.RecordSuspend(kind.Name, obj, false)
	g.Expect(metrics.Tracked(kind.Name, req.NamespacedName)).To(BeTrue())

	_, err := r.Reconcile(ctx, req)
	g.Expect(err).To(MatchError(finalizeErr), "a failed finalization keeps the finalizer and is retried")
	g.Expect(c.Get(ctx, req.NamespacedName, &sourcev1.GitRepository{})).To(Succeed())
	g.Expect(forgotten).To(BeEmpty())

	finalizeErr = nil
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(finalized).To(Equal(2))
	g.Expect(gone).To(BeEmpty(), "nothing is removed while the object is being finalized")
	g.Expect(forgotten).To(Equal([]types.NamespacedName{req.NamespacedName}))
	g.Expect(c.Get(ctx, req.NamespacedName, &sourcev1.GitRepository{})).NotTo(Succeed(), "the object is gone once its finalizer is removed")
	g.Expect(metrics.Tracked(kind.Name, req.NamespacedName)).To(BeFalse(), "its duration and suspend series are dropped")

	// As if the object had gone without its finalizer.
	metrics.RecordDuration(kind.Name, obj, time.Now())
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred(), "a gone object is no error")
	g.Expect(forgotten).To(HaveLen(2), "and is forgotten")
	g.Expect(gone).To(Equal([]types.NamespacedName{req.NamespacedName}), "what was stored for it is removed once it is gone, not before")
	g.Expect(metrics.Tracked(kind.Name, req.NamespacedName)).To(BeFalse(), "with its series, also when it went without its finalizer")
}

func TestRunnerQuietProgressWritesNoStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := newRepo()
	obj.Finalizers = []string{meta.Finalizer}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj).
		WithStatusSubresource(&sourcev1.GitRepository{}).Build()
	kind := testKind(func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
		return outcome.ResultEmpty, outcome.ProgressQuietly(meta.ProgressingReason, errors.New("waiting"), time.Second)
	})
	kind.RecheckedFields = []string{"conditions"}
	r := &Runner[*sourcev1.GitRepository]{Client: c, Kind: kind}
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Second))
	stored := &sourcev1.GitRepository{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
	g.Expect(stored.Status.Conditions).To(BeEmpty(), "a quiet run that changed only rechecked fields writes nothing")

	kind.RecheckedFields = nil
	r.Kind = kind
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
	g.Expect(conditions.Reason(stored, meta.ReadyCondition)).To(Equal(meta.ProgressingReason), "without rechecked fields the run writes")
}

// repoClient returns a fake client holding objs, with the GitRepository's
// status subresource.
func repoClient(objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithStatusSubresource(&sourcev1.GitRepository{}).Build()
}

// forwarded keeps the events a Recorder forwards.
type forwarded struct{ events []event.Event }

func (f *forwarded) Forward(_ context.Context, _ client.Object, e event.Event) {
	f.events = append(f.events, e)
}

// TestRunnerRecordsRecovery: a run that makes a failing object Ready
// records one Normal event with the Ready reason and message (alerts
// resolve the failure with it); a run of an object already Ready, or of a
// new one, records none.
func TestRunnerRecordsRecovery(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := newRepo()
	c := repoClient(obj)
	failing := true
	kind := testKind(func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
		if failing {
			return outcome.ResultEmpty, outcome.Fail(sourcev1.GitOperationFailedReason, errors.New("host down"))
		}
		return outcome.ResultSuccess, nil
	})
	sink := &forwarded{}
	r := &Runner[*sourcev1.GitRepository]{Client: c, Kind: kind, Events: &event.Recorder{Sink: sink}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	reasons := func() []string {
		var out []string
		for _, e := range sink.events {
			out = append(out, e.Type+" "+e.Reason+": "+e.Message)
		}
		return out
	}

	_, _ = r.Reconcile(ctx, req)
	g.Expect(reasons()).To(Equal([]string{"Warning " + sourcev1.GitOperationFailedReason + ": host down"}))
	failing = false
	_, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reasons()).To(HaveLen(2))
	g.Expect(reasons()[1]).To(Equal("Normal " + meta.SucceededReason + ": done"))
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reasons()).To(HaveLen(2), "an object that stays Ready records nothing more")
}

// TestRunnerRecordsNoRecoveryAfterAWait: an object that waited (for its
// source's first artifact, say) and is then Ready did not fail: no event
// says it recovered.
func TestRunnerRecordsNoRecoveryAfterAWait(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := newRepo()
	c := repoClient(obj)
	waiting := true
	kind := testKind(func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
		if waiting {
			return outcome.ResultEmpty, outcome.Wait(meta.ArtifactFailedReason, errors.New("no artifact yet"), time.Minute)
		}
		return outcome.ResultSuccess, nil
	})
	sink := &forwarded{}
	r := &Runner[*sourcev1.GitRepository]{Client: c, Kind: kind, Events: &event.Recorder{Sink: sink}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}

	_, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	got := &sourcev1.GitRepository{}
	g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
	g.Expect(conditions.IsFalse(got, meta.ReadyCondition)).To(BeTrue(), "a wait is Ready=False")
	g.Expect(Failing(got)).To(BeFalse())
	waiting = false
	_, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
	g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
	g.Expect(sink.events).To(BeEmpty(), "neither the wait nor its end is an event")
}

// TestRunnerWaitsQuietlyOnceForWhatIsUnderWay: the first run of an object
// without a status that waits for something under way (a source fetching
// its first artifact) writes no status; the next run that still waits
// says so; an object that has a status always does, but for a wait that
// keeps its status, once.
func TestRunnerWaitsQuietlyOnceForWhatIsUnderWay(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	obj := newRepo()
	c := repoClient(obj)
	kind := testKind(func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
		return outcome.ResultEmpty, outcome.WaitQuietly(meta.ArtifactFailedReason, errors.New("no artifact yet"), time.Minute)
	})
	r := &Runner[*sourcev1.GitRepository]{Client: c, Kind: kind, Events: &event.Recorder{}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	got := func() *sourcev1.GitRepository {
		out := &sourcev1.GitRepository{}
		g.Expect(c.Get(ctx, req.NamespacedName, out)).To(Succeed())
		return out
	}

	res, err := r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Minute))
	g.Expect(got().Status.Conditions).To(BeEmpty(), "the first quiet wait writes no status")
	g.Expect(got().Finalizers).To(BeEmpty(), "nor a finalizer: the first quiet wait writes nothing")

	res, err = r.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Minute))
	g.Expect(conditions.Reason(got(), meta.ReadyCondition)).To(Equal(meta.ArtifactFailedReason), "the second says it waits")

	other := newRepo()
	other.Name = "other"
	conditions.MarkTrue(other, meta.ReadyCondition, meta.SucceededReason, "stored")
	g.Expect(c.Create(ctx, other)).To(Succeed())
	g.Expect(c.Status().Update(ctx, other)).To(Succeed())
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(other)})
	g.Expect(err).NotTo(HaveOccurred())
	after := &sourcev1.GitRepository{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(other), after)).To(Succeed())
	g.Expect(conditions.Reason(after, meta.ReadyCondition)).To(Equal(meta.ArtifactFailedReason), "an object with a status says at once that it waits")

	// A wait that keeps the status (this process catching up after a
	// failover) is quiet once even for an object that has one.
	keeps := testKind(func(context.Context, *sourcev1.GitRepository) (outcome.Result, error) {
		return outcome.ResultEmpty, outcome.WaitKeepingStatus(meta.ArtifactFailedReason, errors.New("stored again here"), time.Minute)
	})
	rk := &Runner[*sourcev1.GitRepository]{Client: c, Kind: keeps, Events: &event.Recorder{}}
	taken := newRepo()
	taken.Name = "taken"
	taken.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "then"}
	conditions.MarkTrue(taken, meta.ReadyCondition, meta.SucceededReason, "applied by the replica that went")
	g.Expect(c.Create(ctx, taken)).To(Succeed())
	taken.Status.LastHandledReconcileAt = "then" // a request handled long ago is none
	g.Expect(c.Status().Update(ctx, taken)).To(Succeed())
	takenReq := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(taken)}
	res, err = rk.Reconcile(ctx, takenReq)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Minute))
	g.Expect(c.Get(ctx, takenReq.NamespacedName, after)).To(Succeed())
	g.Expect(conditions.Reason(after, meta.ReadyCondition)).To(Equal(meta.SucceededReason), "its status kept")
	_, err = rk.Reconcile(ctx, takenReq)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, takenReq.NamespacedName, after)).To(Succeed())
	g.Expect(conditions.Reason(after, meta.ReadyCondition)).To(Equal(meta.ArtifactFailedReason), "the next run says it waits")

	asked := newRepo()
	asked.Name = "asked"
	asked.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
	g.Expect(c.Create(ctx, asked)).To(Succeed())
	_, err = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(asked)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(asked), after)).To(Succeed())
	g.Expect(after.Status.LastHandledReconcileAt).To(Equal("now"), "a run asked for says it handled the request")
	g.Expect(conditions.Reason(after, meta.ReadyCondition)).To(Equal(meta.ArtifactFailedReason))
}

// recordedEvents is an event.Sink that keeps what it receives.
type recordedEvents struct{ events []event.Event }

// Forward keeps e.
func (r *recordedEvents) Forward(_ context.Context, _ client.Object, e event.Event) {
	r.events = append(r.events, e)
}

// TestRunnerAddsTheFinalizerToFinalizedKindsOnly: a Kustomization gets the
// finalizer in its first run (its deletion prunes); a GitRepository, whose
// controller removes its artifacts once it is gone, does not, and its
// first run writes only its status.
func TestRunnerAddsTheFinalizerToFinalizedKindsOnly(t *testing.T) {
	ctx := context.Background()
	succeed := func(context.Context, client.Object, *patch.Helper) (outcome.Result, error) {
		return outcome.ResultSuccess, nil
	}

	t.Run("Kustomization", func(t *testing.T) {
		g := NewWithT(t)
		obj := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", Generation: 1},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}}}
		c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj).WithStatusSubresource(obj).Build()
		r := &Runner[*kustomizev1.Kustomization]{Client: c, Events: &event.Recorder{}, Kind: Kind[*kustomizev1.Kustomization]{
			Name: kustomizev1.KustomizationKind, New: func() *kustomizev1.Kustomization { return &kustomizev1.Kustomization{} },
			SuccessReason: meta.ReconciliationSucceededReason, SuccessMessage: func(*kustomizev1.Kustomization) string { return "applied" },
			Run: func(ctx context.Context, o *kustomizev1.Kustomization, p *patch.Helper) (outcome.Result, error) {
				return succeed(ctx, o, p)
			},
		}}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		g.Expect(err).NotTo(HaveOccurred())
		got := &kustomizev1.Kustomization{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		g.Expect(got.Finalizers).To(ConsistOf(meta.Finalizer))
	})

	t.Run("GitRepository", func(t *testing.T) {
		g := NewWithT(t)
		obj := newRepo()
		c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj).WithStatusSubresource(obj).Build()
		kind := testKind(func(ctx context.Context, o *sourcev1.GitRepository) (outcome.Result, error) {
			return succeed(ctx, o, nil)
		})
		r := &Runner[*sourcev1.GitRepository]{Client: c, Events: &event.Recorder{}, Kind: kind}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		g.Expect(err).NotTo(HaveOccurred())
		got := &sourcev1.GitRepository{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		g.Expect(got.Finalizers).To(BeEmpty())
		g.Expect(conditions.IsTrue(got, meta.ReadyCondition)).To(BeTrue())
	})
}
