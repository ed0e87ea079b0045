package ssa

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/parallel"
)

// bomb is the name of the object whose requests panic.
const bomb = "bomb"

// nilMapPanic is what writing to a nil map panics with.
const nilMapPanic = "panicked: assignment to entry in nil map"

// panickyClient panics, as a bug on an unusual object would, in the
// requests for the object named bomb: reads when onGet, server-side
// applies whose dry-run setting is dryRun otherwise. It counts the reads.
type panickyClient struct {
	client.Client
	onGet  bool
	dryRun bool
	gets   atomic.Int32
}

func (c *panickyClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	if c.onGet && key.Name == bomb {
		explode()
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *panickyClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	named, ok := obj.(interface{ GetName() string })
	dryRun := len(new(client.ApplyOptions).ApplyOptions(opts).DryRun) > 0
	if !c.onGet && ok && named.GetName() == bomb && dryRun == c.dryRun {
		explode()
	}
	return c.Client.Apply(ctx, obj, opts...)
}

// explode panics with a runtime error.
func explode() {
	var m map[string]int
	m["x"] = 1
}

// threeConfigMaps has the ConfigMaps a, bomb and c.
const threeConfigMaps = `
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: ${NS}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bomb, namespace: ${NS}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: ${NS}}
`

func newPanickyManager(t *testing.T, ns string, c *panickyClient) *Manager {
	t.Helper()
	c.Client = env.Client
	m, err := New(c, env.Client.RESTMapper(), Options{FieldManager: testFieldManager, Owner: Owner{Name: "app", Namespace: ns}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestApplyAllStagedFailsOnlyTheObjectThatPanicked(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	m := newPanickyManager(t, ns, &panickyClient{})

	cs, err := m.ApplyAllStaged(context.Background(), parse(t, ns, threeConfigMaps), ApplyOptions{})

	var ae *ApplyError
	g.Expect(errors.As(err, &ae)).To(BeTrue(), "error: %v", err)
	g.Expect(ae.Failures).To(HaveLen(1))
	g.Expect(ae.Failures[0].Object.Subject()).To(Equal("ConfigMap/" + ns + "/bomb"))
	g.Expect(ae.Failures[0].Message).To(ContainSubstring(nilMapPanic))
	g.Expect(ae.Failures[0].Message).NotTo(ContainSubstring("goroutine"), "no stack in the message")
	g.Expect(actions(cs)).To(Equal(map[string]Action{
		"ConfigMap/" + ns + "/a": ActionCreated,
		"ConfigMap/" + ns + "/c": ActionCreated,
	}))
	g.Expect(get(t, "v1", "ConfigMap", ns, "a")).NotTo(BeNil())
	g.Expect(get(t, "v1", "ConfigMap", ns, "c")).NotTo(BeNil())
	g.Expect(get(t, "v1", "ConfigMap", ns, bomb)).To(BeNil())
}

func TestApplyAllStagedRefusesTheObjectWhosePlanPanicked(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	m := newPanickyManager(t, ns, &panickyClient{dryRun: true})

	_, err := m.ApplyAllStaged(context.Background(), parse(t, ns, threeConfigMaps), ApplyOptions{})

	var ve *ValidationError
	g.Expect(errors.As(err, &ve)).To(BeTrue(), "error: %v", err)
	g.Expect(ve.Failures).To(HaveLen(1))
	g.Expect(ve.Failures[0].Error()).To(Equal("ConfigMap/" + ns + "/bomb: " + nilMapPanic))
}

func TestVerifyFailsOnAPanic(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	cs, err := newManager(t, ns).ApplyAllStaged(ctx, parse(t, ns, threeConfigMaps), ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	c := &panickyClient{onGet: true}
	m := newPanickyManager(t, ns, c)

	live, err := m.Verify(ctx, cs.Applied())

	g.Expect(live).To(BeNil())
	g.Expect(err).To(MatchError(ContainSubstring("verifying " + entryOf(ns, bomb).ID + ": " + nilMapPanic)))
	g.Expect(err).NotTo(MatchError(ErrDrifted))
	var p *parallel.PanicError
	g.Expect(errors.As(err, &p)).To(BeTrue())
	g.Expect(c.gets.Load()).To(BeEquivalentTo(3), "every object was read")
}
