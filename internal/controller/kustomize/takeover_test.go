package kustomize

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/ssa"
	"github.com/windlass-dev/windlass/internal/versions"
)

// TestTakeOverWithoutMemory: a Ready Kustomization records in its status
// what its last run verified, and a reconciler that never applied it (a
// restarted controller, or the replica that takes it over) runs it with no
// dry run, read or write of its objects when nothing changed; when an
// object changed, it applies again. A Kustomization built from a Secret
// records nothing.
func TestTakeOverWithoutMemory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{
		"deploy/a.yaml":   substitutedConfigMap(ns, "a"),
		"deploy/web.yaml": deployment(ns, "web"),
		"other/b.yaml":    substitutedConfigMap(ns, "b"),
	})
	applyManifests(g, ns, src)
	applyManifests(g, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata:\n  value: one\n---\n"+
		"apiVersion: v1\nkind: Secret\nmetadata:\n  name: secret-vars\nstringData:\n  value: two\n---\n"+
		kustomization("app", "app", "  path: ./deploy\n  wait: true\n  postBuild:\n    substituteFrom:\n    - kind: ConfigMap\n      name: vars\n")+
		"---\n"+kustomization("secret", "app", "  path: ./other\n  postBuild:\n    substituteFrom:\n    - kind: Secret\n      name: secret-vars\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	ready := waitForKs(g, key, func(k *kustomizev1.Kustomization) bool { return ksReady("")(k) && k.Status.Verified != nil })
	g.Expect(ready.Status.Verified.Inputs).To(HavePrefix("sha256:"))
	g.Expect(ready.Status.Verified.Output).To(HavePrefix("sha256:"))
	g.Expect(ready.Status.Verified.Objects).To(HavePrefix("sha256:"))

	fromSecret := waitForKs(g, client.ObjectKey{Namespace: ns, Name: "secret"}, ksReady(""))
	g.Expect(fromSecret.Status.Verified).To(BeNil(), "no digest of inputs that include a Secret")

	fresh := freshReconciler(t, g)
	runFresh := func() *kustomizev1.Kustomization {
		obj := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		_, err := fresh.run(ctx, obj, patch.NewHelper(obj, env.Client))
		g.Expect(err).NotTo(HaveOccurred())
		return obj
	}
	objectRequests := func() int {
		return dryRuns.In(ns) + applies.In(ns) + reads.Of(ns, "configmaps", "a") + reads.Of(ns, "deployments", "web")
	}
	before := objectRequests()
	ran := runFresh()
	g.Expect(objectRequests()).To(Equal(before), "a reconciler with no memory of the apply sends nothing about the objects")
	g.Expect(ran.Status.Verified).To(Equal(ready.Status.Verified))
	g.Expect(ran.Status.Inventory).To(Equal(ready.Status.Inventory))

	// An object written since the status was: the digest of the versions
	// no longer matches, and the fresh reconciler applies again.
	fresh = freshReconciler(t, g)
	var cm corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &cm)).To(Succeed())
	cm.Data["value"] = "edited"
	g.Expect(env.Client.Update(ctx, &cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
	dryRunsBefore := dryRuns.In(ns)
	ran = runFresh()
	g.Expect(dryRuns.In(ns)).To(BeNumerically(">", dryRunsBefore), "a changed object takes the whole pipeline")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &cm)).To(Succeed())
	g.Expect(cm.Data["value"]).To(Equal("one"))
	g.Expect(ran.Status.Verified).NotTo(BeNil())
	g.Expect(ran.Status.Verified.Objects).NotTo(Equal(ready.Status.Verified.Objects), "the objects' new versions")
	g.Expect(ran.Status.Verified.Inputs).To(Equal(ready.Status.Verified.Inputs))
}

// freshReconciler returns a Kustomization reconciler with no memory, as a
// new process has, whose requests about the applied objects are counted,
// with a watch of the objects it applies (see WatchOptions).
func freshReconciler(t *testing.T, g *WithT) *KustomizationReconciler {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(CountRequests)
	httpClient, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	watch, err := versions.New(env.Config, env.Client.RESTMapper(), ssa.Owner{}.NameLabel(), WatchOptions()...)
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = watch.Start(ctx) }()
	return &KustomizationReconciler{
		Client:            env.Client,
		Fetcher:           fetch.NewHTTP(),
		Applier:           &impersonation.Factory{Config: cfg, HTTPClient: httpClient, Scheme: scheme.New(), Mapper: env.Client.RESTMapper()},
		DependencyRequeue: time.Second,
		Versions:          watch,
		Health:            watch,
	}
}

// countingFetcher counts the artifacts fetched.
type countingFetcher struct {
	fetch.Fetcher
	fetched int
}

// Fetch counts, then fetches.
func (f *countingFetcher) Fetch(ctx context.Context, a meta.Artifact, dir string) error {
	f.fetched++
	return f.Fetcher.Fetch(ctx, a, dir)
}

// TestTakeOverWhileTheArtifactIsStoredAgain: a replica that takes over a
// Kustomization and its source, whose artifact the replica that went
// stored, runs the Kustomization at once when its status.verified says
// nothing changed: it needs no artifact. One whose inputs changed needs
// the artifact, and waits for it, keeping its status, rather than fail.
func TestTakeOverWhileTheArtifactIsStoredAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	_, src := appRepo(t, "app", map[string]string{"deploy/a.yaml": substitutedConfigMap(ns, "a")})
	applyManifests(g, ns, src)
	applyManifests(g, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vars\ndata:\n  value: one\n---\n"+
		kustomization("app", "app", "  path: ./deploy\n  postBuild:\n    substituteFrom:\n    - kind: ConfigMap\n      name: vars\n"))
	key := client.ObjectKey{Namespace: ns, Name: "app"}
	ready := waitForKs(g, key, func(k *kustomizev1.Kustomization) bool { return ksReady("")(k) && k.Status.Verified != nil })

	fresh := freshReconciler(t, g)
	fetcher := &countingFetcher{Fetcher: fresh.Fetcher}
	fresh.Fetcher = fetcher
	var asked []string
	fresh.StoredAgainHere = func(kind string, source client.Object, _ meta.Artifact) bool {
		asked = append(asked, kind+"/"+source.GetName())
		return true
	}
	run := func() (*kustomizev1.Kustomization, error) {
		obj := &kustomizev1.Kustomization{}
		g.Expect(env.Client.Get(ctx, key, obj)).To(Succeed())
		_, err := fresh.run(ctx, obj, patch.NewHelper(obj, env.Client))
		return obj, err
	}
	ran, err := run()
	g.Expect(err).NotTo(HaveOccurred(), "status.verified: nothing to build, no artifact needed")
	g.Expect(ran.Status.Inventory).To(Equal(ready.Status.Inventory))
	g.Expect(fetcher.fetched).To(BeZero())
	g.Expect(asked).To(BeEmpty(), "the run never asked for the artifact")

	// New inputs: the run needs the artifact, which is being stored here.
	fresh = freshReconciler(t, g)
	fresh.Fetcher, fresh.StoredAgainHere = fetcher, func(string, client.Object, meta.Artifact) bool { return true }
	var vars corev1.ConfigMap
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vars"}, &vars)).To(Succeed())
	vars.Data["value"] = "two"
	g.Expect(env.Client.Update(ctx, &vars)).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := run()
		w := outcome.QuietWait(err)
		g.Expect(w).NotTo(BeNil(), "%v", err)
		g.Expect(w.KeepsStatus).To(BeTrue())
		g.Expect(err).To(MatchError(ContainSubstring("was stored by another replica and is being stored again here")))
	}).Should(Succeed())
	g.Expect(fetcher.fetched).To(BeZero(), "no download from an address that may be gone")
}
