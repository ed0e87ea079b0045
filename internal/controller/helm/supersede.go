package helm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/predicates"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/reconcile/sourceref"
)

// actionsUnderWay keeps the Helm actions that are running, each with what
// it attempts, so that a new chart artifact or a new spec of its
// HelmRelease cancels the action's wait for the old one: the new revision
// is released at once instead of after the old one's timeout (a wait
// holds a worker for as long as spec.timeout).
type actionsUnderWay struct {
	mu      sync.Mutex
	running map[types.NamespacedName]*attempt
}

// attempt is one action under way.
type attempt struct {
	// source is the sourceref key of the chart's source, and digest the
	// digest of the artifact the action releases.
	source, digest string
	// spec is what the release is made of, as the HelmRelease declared it
	// when the action began.
	spec   releaseMaking
	cancel context.CancelCauseFunc
}

// releaseMaking is what of a HelmRelease's spec makes its release: a
// change of any of it is a new revision of the release.
type releaseMaking struct {
	ChartRef                                       *helmv2.CrossNamespaceSourceReference
	ReleaseName, TargetNamespace, StorageNamespace string
	ServiceAccountName                             string
	Values                                         any
	ValuesFrom                                     []helmv2.ValuesReference
	PostRenderers                                  []helmv2.PostRenderer
	CommonMetadata                                 any
}

func makingOf(obj *helmv2.HelmRelease) releaseMaking {
	s := obj.Spec
	return releaseMaking{
		ChartRef: s.ChartRef, ReleaseName: s.ReleaseName, TargetNamespace: s.TargetNamespace,
		StorageNamespace: s.StorageNamespace, ServiceAccountName: s.ServiceAccountName,
		Values: s.Values, ValuesFrom: s.ValuesFrom, PostRenderers: s.PostRenderers, CommonMetadata: s.CommonMetadata,
	}
}

// Superseded is the cause with which an action is cancelled when a new
// revision of what it releases arrives.
type Superseded struct {
	// What names the new revision.
	What string
}

func (s *Superseded) Error() string { return s.What + " arrived" }

// start registers the action that obj's run begins for sc and returns the
// context it runs under, cancelled with a *Superseded cause when a new
// revision arrives, and the function that ends it.
func (a *actionsUnderWay) start(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	at := &attempt{source: sourceref.Key(obj.Namespace, chartRef(obj)), digest: sc.digest, spec: makingOf(obj), cancel: cancel}
	a.mu.Lock()
	if a.running == nil {
		a.running = map[types.NamespacedName]*attempt{}
	}
	a.running[key] = at
	a.mu.Unlock()
	return ctx, func() {
		a.mu.Lock()
		if a.running[key] == at {
			delete(a.running, key)
		}
		a.mu.Unlock()
		cancel(nil)
	}
}

// releaseChanged cancels the action of obj when its spec makes another
// release than the one the action makes.
func (a *actionsUnderWay) releaseChanged(obj *helmv2.HelmRelease) {
	a.mu.Lock()
	defer a.mu.Unlock()
	at, ok := a.running[types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}]
	if ok && !equality.Semantic.DeepEqual(at.spec, makingOf(obj)) {
		at.cancel(&Superseded{What: fmt.Sprintf("generation %d of the HelmRelease", obj.Generation)})
	}
}

// artifactChanged cancels the actions that release another artifact of the
// source whose key is source than digest.
func (a *actionsUnderWay) artifactChanged(source, digest, revision string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, at := range a.running {
		if at.source == source && at.digest != digest {
			at.cancel(&Superseded{What: fmt.Sprintf("revision %s of %s", revision, source)})
		}
	}
}

// supersededBy returns the cause of ctx when a new revision cancelled it.
func supersededBy(ctx context.Context) *Superseded {
	s, _ := context.Cause(ctx).(*Superseded)
	return s
}

// onReleaseUpdate is the handler of HelmRelease updates that cancels the
// action a new spec supersedes; it enqueues nothing (the controller's own
// watch does).
func (a *actionsUnderWay) onReleaseUpdate() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			if hr, ok := e.ObjectNew.(*helmv2.HelmRelease); ok && e.ObjectOld.GetGeneration() != hr.Generation {
				a.releaseChanged(hr)
			}
		},
	}
}

// onArtifactUpdate is the handler of updates of chart sources of kind that
// cancels the actions a new artifact supersedes; it enqueues nothing.
func (a *actionsUnderWay) onArtifactUpdate(kind string) handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			if !(predicates.ArtifactChanged{}).Update(e) {
				return
			}
			if s, ok := e.ObjectNew.(predicates.ArtifactSource); ok && s.GetArtifact() != nil {
				a.artifactChanged(sourceref.KeyOf(kind, e.ObjectNew), s.GetArtifact().Digest, s.GetArtifact().Revision)
			}
		},
	}
}

// SupersededReason is the reason of a HelmRelease whose action was
// cancelled while it waited, because a new revision arrived.
const SupersededReason = "Superseded"

// superseded reports an action that a new revision cancelled: not a
// failure (no retry is used up, nothing is remediated; Helm has marked the
// release it made failed), and the next run, which the new revision
// already queued, releases the new revision.
func (r *HelmReleaseReconciler) superseded(ctx context.Context, obj *helmv2.HelmRelease, sc *releaseScope, action string, by *Superseded) error {
	msg := fmt.Sprintf("Helm %s of release %s/%s with chart %s@%s cancelled while it waited: %s", action, obj.GetReleaseNamespace(),
		obj.GetReleaseName(), sc.chart.Metadata.Name, sc.chart.Metadata.Version, by)
	conditions.MarkFalse(obj, helmv2.ReleasedCondition, SupersededReason, "%s", msg)
	r.Events.Normal(ctx, obj, SupersededReason, sc.revision, msg)
	return outcome.Progress(SupersededReason, errors.New(msg), supersededRequeue)
}

// supersededRequeue is when a superseded run looks again, should the new
// revision's event have queued nothing (it always does).
const supersededRequeue = time.Second
