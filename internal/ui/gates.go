package ui

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/reconcile/gate"
	"github.com/windlass-dev/windlass/internal/state"
)

// week is how far ahead a gate's timeline looks.
const week = 7 * 24 * time.Hour

// gateView is one gate as the pages show it: its state and why, its next
// transition, its week ahead and the objects that wait behind it.
type gateView struct {
	Row row
	// Evaluated is false until the gating controller has decided the
	// gate's state.
	Evaluated, Open bool
	// Why is the Opened condition's message.
	Why  string
	Next *metav1.Time
	// Default, Window and Schedules are what the spec says, in words.
	Default, Window string
	Schedules       []string
	Timeline        timeline
	// Consumers are the objects whose spec.gates name the gate; Held
	// counts those it holds back now.
	Consumers []row
	Held      int
}

// gatesPage is what the gates page shows.
type gatesPage struct {
	Gates     []gateView
	Namespace string
	Now       time.Time
}

// gates serves the gates page: every gate, its state and its week ahead.
func (s *Server) gates(w http.ResponseWriter, r *http.Request) {
	k, ok := s.kind(gatingv1alpha1.GateKind)
	if !ok {
		s.fail(w, http.StatusNotFound, "this UI does not show gates")
		return
	}
	page := gatesPage{Namespace: r.URL.Query().Get("namespace"), Now: s.now()}
	consumers, err := s.gateConsumers(r)
	if err != nil {
		s.Log.Error(err, "Listing the consumers of gates")
		s.fail(w, http.StatusInternalServerError, "listing the consumers of gates failed")
		return
	}
	list := k.NewList()
	if err := s.Reader.List(r.Context(), list); err != nil {
		s.Log.Error(err, "Listing gates")
		s.fail(w, http.StatusInternalServerError, "listing gates failed")
		return
	}
	for _, item := range k.Items(list) {
		g := item.(*gatingv1alpha1.Gate)
		if page.Namespace == "" || g.Namespace == page.Namespace {
			page.Gates = append(page.Gates, viewOf(k, g, consumers[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}], page.Now))
		}
	}
	slices.SortFunc(page.Gates, func(a, b gateView) int {
		return strings.Compare(a.Row.Namespace+"/"+a.Row.Name, b.Row.Namespace+"/"+b.Row.Name)
	})
	s.render(w, "gates", page)
}

// gateConsumers returns the objects of every kind with spec.gates, by the
// gates they name.
func (s *Server) gateConsumers(r *http.Request) (map[types.NamespacedName][]row, error) {
	out := map[types.NamespacedName][]row{}
	for _, k := range s.Kinds {
		if k.Gates == kinds.NoGates {
			continue
		}
		list := k.NewList()
		if err := s.Reader.List(r.Context(), list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", k.Kind, err)
		}
		for _, item := range k.Items(list) {
			consumer, ok := item.(gate.Consumer)
			obj, isObject := item.(object)
			if !ok || !isObject {
				continue
			}
			for _, ref := range consumer.GetGates() {
				key := gate.Key(consumer, ref)
				out[key] = append(out[key], s.row(k, obj))
			}
		}
	}
	return out, nil
}

// gateView returns the view of the gate g for its page, with its
// consumers; without them when they cannot be listed.
func (s *Server) gateView(r *http.Request, k kinds.Kind, g *gatingv1alpha1.Gate, now time.Time) *gateView {
	consumers, err := s.gateConsumers(r)
	if err != nil {
		s.Log.Error(err, "Listing the consumers of a gate", "object", client.ObjectKeyFromObject(g))
	}
	view := viewOf(k, g, consumers[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}], now)
	return &view
}

// viewOf returns the view of g, with its consumers, at now.
func viewOf(k kinds.Kind, g *gatingv1alpha1.Gate, consumers []row, now time.Time) gateView {
	v := gateView{Row: rowOf(k, g), Next: g.Status.NextTransition, Default: string(g.Spec.Default),
		Window: g.GetWindow().String(), Consumers: consumers}
	if opened := conditions.Get(g, gatingv1alpha1.OpenedCondition); opened != nil {
		v.Evaluated, v.Open, v.Why = true, opened.Status == metav1.ConditionTrue, opened.Message
	}
	for _, sched := range g.Spec.Schedules {
		zone := sched.TimeZone
		if zone == "" {
			zone = "UTC"
		}
		v.Schedules = append(v.Schedules, fmt.Sprintf("%s for %s from '%s' (%s)", sched.Action, sched.Duration.Duration, sched.Cron, zone))
	}
	for _, c := range consumers {
		if c.State == state.Held {
			v.Held++
		}
	}
	spans, _ := gate.Timeline(g, now, now.Add(week)) // an invalid spec is one closed span
	v.Timeline = timelineOf(spans, now)
	return v
}
