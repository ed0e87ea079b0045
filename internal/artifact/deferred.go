package artifact

import (
	"context"
	"path"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/windlass-dev/windlass/api/meta"
)

// A deferred artifact is one that this storage lacks, that its source's
// status names (another replica stored it, under the address the replicas
// share) and that the source controller of this process stores again only
// when something asks for it: a source taken over whose remote still
// serves the same revision is not fetched again until a consumer needs its
// content. A reader that finds a deferred artifact missing asks for it
// (Ask, Restore; AskToStore also before the source's run deferred it);
// the source's next run stores it (AskedToStore), and
// StoredAgain or Undefer ends the deferral. A run that stores again an
// artifact that another replica stored says so (Storing), so that the
// readers that find it missing meanwhile wait for it too, until the run
// ends (EndStoring).

// maxRestoreWait bounds how long Restore waits for an artifact to be stored.
const maxRestoreWait = 2 * time.Minute

// askBuffer is how many asks a source controller may have yet to take:
// beyond, an ask is dropped, and the reader that asked asks again at its
// next try.
const askBuffer = 1024

// deferrals are the deferred artifacts of a Storage, by the folder of
// their object, and the channels on which the source controllers hear the
// asks, by kind.
type deferrals struct {
	mu      sync.Mutex
	byDir   map[string]*deferral
	askedTo map[string]chan event.GenericEvent
}

// deferral is one deferred artifact.
type deferral struct {
	kind, namespace, name string
	// file is the artifact's file name in its object's folder.
	file string
	// asked is set once a reader asked for it; storing while a run
	// stores it (see Storing).
	asked, storing bool
	// stored is closed when the deferral ends.
	stored chan struct{}
}

// Defer records that a, the artifact of obj, of kind, which this storage
// lacks, is stored again when a reader asks for it. A deferral of a that
// exists stays as it is (asked for or not); one of another artifact of
// obj's ends, its readers going on.
func (s *Storage) Defer(kind string, obj metav1.Object, a meta.Artifact) {
	dir := objectDir(kind, obj.GetNamespace(), obj.GetName())
	d := &s.deferrals
	d.mu.Lock()
	defer d.mu.Unlock()
	d.put(dir, kind, obj, a)
}

// Storing records that a run is storing a, the artifact of obj, of kind,
// that this storage lacks (another replica stored it): the readers that
// find it missing wait until the run stores it or ends (see EndStoring).
func (s *Storage) Storing(kind string, obj metav1.Object, a meta.Artifact) {
	dir := objectDir(kind, obj.GetNamespace(), obj.GetName())
	d := &s.deferrals
	d.mu.Lock()
	defer d.mu.Unlock()
	def := d.put(dir, kind, obj, a)
	def.asked, def.storing = true, true
}

// EndStoring ends the deferral of the artifact of obj, of kind, when a run
// was storing it (see Storing): the run ended, stored or not, and its
// readers go on. A deferral that no run is storing stays.
func (s *Storage) EndStoring(kind string, obj metav1.Object) {
	dir := objectDir(kind, obj.GetNamespace(), obj.GetName())
	d := &s.deferrals
	d.mu.Lock()
	defer d.mu.Unlock()
	if def := d.byDir[dir]; def != nil && def.storing {
		d.end(dir)
	}
}

// put returns the deferral of a, the artifact of obj, of kind, whose
// folder is dir, made if there is none; one of another artifact of obj's
// ends. d.mu is held.
func (d *deferrals) put(dir, kind string, obj metav1.Object, a meta.Artifact) *deferral {
	if old := d.byDir[dir]; old != nil && old.file == path.Base(a.Path) {
		return old
	}
	d.end(dir)
	if d.byDir == nil {
		d.byDir = map[string]*deferral{}
	}
	def := &deferral{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName(), file: path.Base(a.Path), stored: make(chan struct{})}
	d.byDir[dir] = def
	return def
}

// Deferred tells whether a is a deferred artifact.
func (s *Storage) Deferred(a meta.Artifact) bool {
	s.deferrals.mu.Lock()
	defer s.deferrals.mu.Unlock()
	return s.deferrals.of(a) != nil
}

// AskedToStore tells whether a reader asked for the deferred artifact of
// obj, of kind: the source's run stores it then.
func (s *Storage) AskedToStore(kind string, obj metav1.Object) bool {
	d := &s.deferrals
	d.mu.Lock()
	defer d.mu.Unlock()
	def := d.byDir[objectDir(kind, obj.GetNamespace(), obj.GetName())]
	return def != nil && def.asked
}

// Ask asks the source controller to store a, when a is deferred, and tells
// whether it is.
func (s *Storage) Ask(a meta.Artifact) bool {
	_, ok := s.ask(a)
	return ok
}

// Restore asks for a, when a is deferred, and waits until the deferral
// ends (the source stored it, or its run failed), ctx ends or two minutes
// pass. It tells whether it waited for the end: the caller reads a again.
func (s *Storage) Restore(ctx context.Context, a meta.Artifact) bool {
	stored, ok := s.ask(a)
	if !ok {
		return false
	}
	timer := time.NewTimer(maxRestoreWait)
	defer timer.Stop()
	select {
	case <-stored:
		return true
	case <-ctx.Done():
	case <-timer.C:
	}
	return false
}

// ask marks a asked for and sends the ask to its source controller, when
// a is deferred and no run is storing it; it returns the channel closed
// when the deferral ends.
func (s *Storage) ask(a meta.Artifact) (<-chan struct{}, bool) {
	d := &s.deferrals
	d.mu.Lock()
	defer d.mu.Unlock()
	def := d.of(a)
	if def == nil {
		return nil, false
	}
	d.askFor(def)
	return def.stored, true
}

// AskToStore asks the source controller to store a, the artifact of obj,
// of kind, that this storage lacks and that the source's run here stores
// again (another replica stored it): a deferral of a is asked for, as Ask
// does; without one (the run has not deferred a yet) an asked one is
// made, so that the run stores a rather than deferring it, and the
// readers of a wait for it.
func (s *Storage) AskToStore(kind string, obj metav1.Object, a meta.Artifact) {
	d := &s.deferrals
	d.mu.Lock()
	defer d.mu.Unlock()
	d.askFor(d.put(objectDir(kind, obj.GetNamespace(), obj.GetName()), kind, obj, a))
}

// askFor marks def asked for and sends the ask to its source controller,
// unless a run is storing it already. d.mu is held.
func (d *deferrals) askFor(def *deferral) {
	if def.storing {
		return
	}
	def.asked = true
	source := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: def.namespace, Name: def.name}}
	select {
	case d.channel(def.kind) <- event.GenericEvent{Object: source}:
	default:
	}
}

// Undefer ends the deferral of the artifact of obj, of kind, if any: the
// source stored it, or the object went (see EndStoring for a run that
// failed). The readers waiting in Restore go on.
func (s *Storage) Undefer(kind string, obj metav1.Object) {
	s.undefer(objectDir(kind, obj.GetNamespace(), obj.GetName()))
}

// undefer ends the deferral of the object of folder dir, if any.
func (s *Storage) undefer(dir string) {
	s.deferrals.mu.Lock()
	defer s.deferrals.mu.Unlock()
	s.deferrals.end(dir)
}

// end ends the deferral of the object of folder dir, if any: its readers
// go on. d.mu is held.
func (d *deferrals) end(dir string) {
	if def := d.byDir[dir]; def != nil {
		close(def.stored)
		delete(d.byDir, dir)
	}
}

// AsksFor returns the channel on which the source controller of kind
// hears the asks for its deferred artifacts, one event per ask, naming the
// source.
func (s *Storage) AsksFor(kind string) <-chan event.GenericEvent {
	s.deferrals.mu.Lock()
	defer s.deferrals.mu.Unlock()
	return s.deferrals.channel(kind)
}

// of returns the deferral of a, nil when a is not deferred. d.mu is held.
func (d *deferrals) of(a meta.Artifact) *deferral {
	def := d.byDir[path.Dir(a.Path)]
	if def == nil || def.file != path.Base(a.Path) {
		return nil
	}
	return def
}

// channel returns the asks' channel of kind, made on first use. d.mu is
// held.
func (d *deferrals) channel(kind string) chan event.GenericEvent {
	if d.askedTo == nil {
		d.askedTo = map[string]chan event.GenericEvent{}
	}
	ch := d.askedTo[kind]
	if ch == nil {
		ch = make(chan event.GenericEvent, askBuffer)
		d.askedTo[kind] = ch
	}
	return ch
}
