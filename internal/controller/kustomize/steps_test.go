package kustomize

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/health"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// stepRequeue is the DependencyRequeue of the reconcilers of the step
// tables.
const stepRequeue = 7 * time.Second

// stepKs returns the Kustomization apps/app of ./deploy from the
// GitRepository apps/app, at generation 1, changed by mutate.
func stepKs(mutate ...func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", Generation: 1},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: time.Hour},
			Path:      "./deploy",
			Prune:     true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
		},
	}
	for _, m := range mutate {
		m(ks)
	}
	return ks
}

// gitSource returns the GitRepository ns/name with an artifact at
// revision, or without one when revision is empty.
func gitSource(ns, name, revision string) *sourcev1.GitRepository {
	src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/" + name + ".git", Interval: metav1.Duration{Duration: time.Hour}}}
	if revision != "" {
		src.Status.Artifact = &meta.Artifact{Path: "gitrepository/" + ns + "/" + name + "/a.tar.gz", Revision: revision,
			Digest: "sha256:" + revision}
	}
	return src
}

// readyKs returns the Kustomization ns/name of the GitRepository src, Ready
// (or not) for its generation, with revision applied.
func readyKs(ns, name, src, revision string, ready bool) *kustomizev1.Kustomization {
	ks := stepKs(func(k *kustomizev1.Kustomization) {
		k.Namespace, k.Name, k.Spec.SourceRef.Name = ns, name, src
		k.Status.ObservedGeneration = 1
		k.Status.LastAppliedRevision = revision
	})
	if ready {
		conditions.MarkTrue(ks, meta.ReadyCondition, kustomizev1.ReconciliationSucceededReason, "Applied revision: %s", revision)
	} else {
		conditions.MarkFalse(ks, meta.ReadyCondition, kustomizev1.ReconciliationFailedReason, "failed")
	}
	return ks
}

// stepClient returns a fake client holding objs, whose RESTMapper knows
// the kinds of the scheme.
func stepClient(objs ...client.Object) client.WithWatch {
	return failingGets(nil, objs...)
}

// failingGets returns a stepClient whose reads fail with err (unless err
// is nil).
func failingGets(err error, objs ...client.Object) client.WithWatch {
	s := scheme.New()
	b := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(s)).WithObjects(objs...)
	if err != nil {
		b = b.WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return err
		}})
	}
	return b.Build()
}

// TestStep_ReconcileSource runs the source step alone: a source of each
// served kind with an artifact is found and kept for the later steps; one
// that is missing or has no artifact yet is waited for; a refused
// cross-namespace reference or a kind Windlass does not serve stalls. The
// step sets no condition.
func TestStep_ReconcileSource(t *testing.T) {
	tests := []struct {
		name       string
		ref        kustomizev1.CrossNamespaceSourceReference
		noCross    bool
		objs       []client.Object
		wantSource string // kind/namespace/name of the source found
		wantErr    testutil.Outcome
		wantReason string
		wantMsg    string
	}{
		{name: "a GitRepository with an artifact", ref: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
			objs: []client.Object{gitSource("apps", "app", "main@sha1:1")}, wantSource: "GitRepository/apps/app"},
		{name: "an OCIRepository with an artifact", ref: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "app"},
			objs: []client.Object{&sourcev1.OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
				Status: sourcev1.OCIRepositoryStatus{Artifact: &meta.Artifact{Revision: "latest@sha256:1"}}}},
			wantSource: "OCIRepository/apps/app"},
		{name: "a Bucket with an artifact", ref: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.BucketKind, Name: "app"},
			objs: []client.Object{&sourcev1.Bucket{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"},
				Status: sourcev1.BucketStatus{Artifact: &meta.Artifact{Revision: "sha256:1"}}}},
			wantSource: "Bucket/apps/app"},
		{name: "a source of the same name but another kind is not taken",
			ref:     kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: "app"},
			objs:    []client.Object{gitSource("apps", "app", "main@sha1:1")},
			wantErr: testutil.Waiting, wantReason: meta.ArtifactFailedReason, wantMsg: "source OCIRepository 'apps/app' not found"},
		{name: "a missing source is waited for", ref: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
			wantErr: testutil.Waiting, wantReason: meta.ArtifactFailedReason, wantMsg: "source GitRepository 'apps/app' not found"},
		{name: "a source without an artifact is waited for", ref: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
			objs:    []client.Object{gitSource("apps", "app", "")},
			wantErr: testutil.Waiting, wantReason: meta.ArtifactFailedReason, wantMsg: "source GitRepository 'apps/app' has no artifact yet"},
		{name: "a source in another namespace",
			ref:  kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "shared", Namespace: "flux-system"},
			objs: []client.Object{gitSource("flux-system", "shared", "main@sha1:1")}, wantSource: "GitRepository/flux-system/shared"},
		{name: "a source in another namespace, refused", noCross: true,
			ref:     kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "shared", Namespace: "flux-system"},
			objs:    []client.Object{gitSource("flux-system", "shared", "main@sha1:1")},
			wantErr: testutil.Stalled, wantReason: meta.AccessDeniedReason,
			wantMsg: "cross-namespace reference to GitRepository 'flux-system/shared' is not allowed"},
		{name: "a source in its own namespace, named, with the lockdown", noCross: true,
			ref:  kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "app", Namespace: "apps"},
			objs: []client.Object{gitSource("apps", "app", "main@sha1:1")}, wantSource: "GitRepository/apps/app"},
		{name: "a kind Windlass does not serve stalls", ref: kustomizev1.CrossNamespaceSourceReference{Kind: "HelmChart", Name: "app"},
			wantErr: testutil.Stalled, wantReason: meta.UnsupportedSourceKindReason, wantMsg: "source kind 'HelmChart' is not served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &KustomizationReconciler{Client: stepClient(tt.objs...), NoCrossNamespaceRefs: tt.noCross, DependencyRequeue: stepRequeue}
			obj := stepKs(func(k *kustomizev1.Kustomization) { k.Spec.SourceRef = tt.ref })
			sc := &ksScope{}

			res, err := r.reconcileSource(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr == testutil.Waiting {
				g.Expect(testutil.RequeueAfter(err)).To(Equal(stepRequeue))
			}
			if tt.wantSource == "" {
				g.Expect(sc.source).To(BeNil())
				return
			}
			g.Expect(sc.source).NotTo(BeNil())
			gvk, err := apiutil.GVKForObject(sc.source, r.Scheme())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gvk.Kind + "/" + sc.source.GetNamespace() + "/" + sc.source.GetName()).To(Equal(tt.wantSource))
			g.Expect(sc.source.GetArtifact()).NotTo(BeNil())
		})
	}
}

// TestStep_ReconcileDependencies runs the dependencies step alone: with
// every dependency ready (Ready for its generation, at the revision about
// to be applied when it shares the source, or by its readyExpr) the run
// records the revision it attempts; a dependency missing or not ready is
// waited for, and the attempted revision is left as it was; a cycle, a
// refused cross-namespace reference, a kind that cannot be depended on and
// a readyExpr that does not compile stall. The step sets no condition.
func TestStep_ReconcileDependencies(t *testing.T) {
	const revision = "main@sha1:2"
	dep := func(name string) meta.DependencyReference { return meta.DependencyReference{Name: name} }
	helmRelease := func(ready bool) *helmv2.HelmRelease {
		hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db", Generation: 2}}
		hr.Status.ObservedGeneration = 2
		if ready {
			conditions.MarkTrue(hr, meta.ReadyCondition, meta.SucceededReason, "installed")
		} else {
			conditions.MarkFalse(hr, meta.ReadyCondition, meta.SucceededReason, "failed")
		}
		return hr
	}
	tests := []struct {
		name       string
		dependsOn  []meta.DependencyReference
		noCross    bool
		objs       []client.Object
		wantErr    testutil.Outcome
		wantReason string
		wantMsg    string
	}{
		{name: "no dependencies"},
		{name: "a ready dependency of another source", dependsOn: []meta.DependencyReference{dep("db")},
			objs: []client.Object{readyKs("apps", "db", "db", "main@sha1:9", true)}},
		{name: "a ready dependency of the same source at the revision", dependsOn: []meta.DependencyReference{dep("db")},
			objs: []client.Object{readyKs("apps", "db", "app", revision, true)}},
		{name: "a ready dependency of the same source behind the revision", dependsOn: []meta.DependencyReference{dep("db")},
			objs:    []client.Object{readyKs("apps", "db", "app", "main@sha1:1", true)},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' is not ready"},
		{name: "a missing dependency", dependsOn: []meta.DependencyReference{dep("db")},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' not found"},
		{name: "a dependency that is not ready", dependsOn: []meta.DependencyReference{dep("db")},
			objs:    []client.Object{readyKs("apps", "db", "db", "main@sha1:9", false)},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' is not ready"},
		{name: "a dependency Ready for an older generation", dependsOn: []meta.DependencyReference{dep("db")},
			objs: []client.Object{func() client.Object {
				k := readyKs("apps", "db", "db", "main@sha1:9", true)
				k.Generation = 2
				return k
			}()},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' is not ready"},
		{name: "the second of two dependencies is not ready", dependsOn: []meta.DependencyReference{dep("db"), dep("cache")},
			objs:    []client.Object{readyKs("apps", "db", "db", "main@sha1:9", true), readyKs("apps", "cache", "cache", "", false)},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/cache' is not ready"},
		{name: "a ready HelmRelease", dependsOn: []meta.DependencyReference{{Kind: helmv2.HelmReleaseKind, Name: "db"}},
			objs: []client.Object{helmRelease(true)}},
		{name: "a HelmRelease that is not ready", dependsOn: []meta.DependencyReference{{Kind: helmv2.HelmReleaseKind, Name: "db"}},
			objs:    []client.Object{helmRelease(false)},
			wantErr: testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'HelmRelease/apps/db' is not ready"},
		{name: "a readyExpr that holds, though the dependency is not Ready",
			dependsOn: []meta.DependencyReference{{Name: "db", ReadyExpr: "dep.status.lastAppliedRevision == 'main@sha1:9'"}},
			objs:      []client.Object{readyKs("apps", "db", "db", "main@sha1:9", false)}},
		{name: "a readyExpr that does not hold, though the dependency is Ready",
			dependsOn: []meta.DependencyReference{{Name: "db", ReadyExpr: "dep.metadata.name == 'other'"}},
			objs:      []client.Object{readyKs("apps", "db", "db", "main@sha1:9", true)},
			wantErr:   testutil.Waiting, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency 'apps/db' is not ready"},
		{name: "a readyExpr that does not compile", dependsOn: []meta.DependencyReference{{Name: "db", ReadyExpr: "dep.("}},
			objs:    []client.Object{readyKs("apps", "db", "db", "main@sha1:9", true)},
			wantErr: testutil.Stalled, wantReason: meta.InvalidCELExpressionReason, wantMsg: "invalid readyExpr"},
		{name: "a cycle", dependsOn: []meta.DependencyReference{dep("db")},
			objs: []client.Object{func() client.Object {
				k := readyKs("apps", "db", "db", "main@sha1:9", true)
				k.Spec.DependsOn = []meta.DependencyReference{dep("app")}
				return k
			}()},
			wantErr: testutil.Stalled, wantReason: meta.DependencyNotReadyReason, wantMsg: "dependency cycle: apps/app -> apps/db -> apps/app"},
		{name: "a ready dependency in another namespace", dependsOn: []meta.DependencyReference{{Name: "db", Namespace: "infra"}},
			objs: []client.Object{readyKs("infra", "db", "db", "main@sha1:9", true)}},
		{name: "a dependency in another namespace, refused", noCross: true, dependsOn: []meta.DependencyReference{{Name: "db", Namespace: "infra"}},
			objs:    []client.Object{readyKs("infra", "db", "db", "main@sha1:9", true)},
			wantErr: testutil.Stalled, wantReason: meta.AccessDeniedReason,
			wantMsg: "cross-namespace reference to Kustomization 'infra/db' is not allowed"},
		{name: "a kind that cannot be depended on", dependsOn: []meta.DependencyReference{{Kind: sourcev1.GitRepositoryKind, Name: "app"}},
			wantErr: testutil.Stalled, wantReason: meta.DependencyNotReadyReason, wantMsg: "a Kustomization cannot depend on a GitRepository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &KustomizationReconciler{Client: stepClient(tt.objs...), NoCrossNamespaceRefs: tt.noCross, DependencyRequeue: stepRequeue}
			obj := stepKs(func(k *kustomizev1.Kustomization) {
				k.Spec.DependsOn = tt.dependsOn
				k.Status.LastAttemptedRevision = "main@sha1:1"
			})

			res, err := r.reconcileDependencies(context.Background(), obj, &ksScope{source: gitSource("apps", "app", revision)})
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr == testutil.NoError {
				g.Expect(obj.Status.LastAttemptedRevision).To(Equal(revision))
				return
			}
			g.Expect(obj.Status.LastAttemptedRevision).To(Equal("main@sha1:1"), "a run that goes no further attempts nothing")
			if tt.wantErr == testutil.Waiting {
				g.Expect(testutil.RequeueAfter(err)).To(Equal(stepRequeue))
			}
		})
	}
}

// TestStep_ReconcileInputs runs the inputs step alone: the variables of
// postBuild (substituteFrom in order, then substitute) and the keys of the
// decryption Secret are read and digested with the artifact and the spec,
// so that a change to any of them changes the digest; a substituteFrom
// object that is missing is waited for (unless optional); a decryption
// Secret that cannot be read fails. The step sets no condition.
func TestStep_ReconcileInputs(t *testing.T) {
	vars := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "vars"},
		Data: map[string]string{"region": "eu", "tier": "from-configmap"}}
	secretVars := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "secret-vars"},
		Data: map[string][]byte{"token": []byte("s3cret")}}
	sopsKeys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "sops"},
		Data: map[string][]byte{"identity.agekey": []byte("AGE-SECRET-KEY-1")}}
	from := func(kind, name string, optional bool) kustomizev1.SubstituteReference {
		return kustomizev1.SubstituteReference{Kind: kind, Name: name, Optional: optional}
	}
	tests := []struct {
		name       string
		postBuild  *kustomizev1.PostBuild
		decryption *kustomizev1.Decryption
		objs       []client.Object
		getErr     error // what reading a ConfigMap or Secret fails with
		// change changes the world the step reads; the digest must change.
		change     func(g *WithT, c client.Client)
		wantVars   map[string]string
		wantKeys   map[string][]byte
		wantErr    testutil.Outcome
		wantReason string
		wantMsg    string
	}{
		{name: "nothing to read"},
		{name: "inline variables", postBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"env": "prod"}},
			wantVars: map[string]string{"env": "prod"}},
		{name: "a ConfigMap and a Secret, overridden inline",
			postBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"tier": "inline"},
				SubstituteFrom: []kustomizev1.SubstituteReference{from("ConfigMap", "vars", false), from("Secret", "secret-vars", false)}},
			objs: []client.Object{vars, secretVars},
			change: func(g *WithT, c client.Client) {
				cm := vars.DeepCopy()
				cm.Data["region"] = "us"
				g.Expect(c.Update(context.Background(), cm)).To(Succeed())
			},
			wantVars: map[string]string{"region": "eu", "tier": "inline", "token": "s3cret"}},
		{name: "a missing substituteFrom object is waited for",
			postBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{from("ConfigMap", "vars", false)}},
			wantErr:   testutil.Waiting, wantReason: kustomizev1.SubstitutionFailedReason,
			wantMsg: "substitute from ConfigMap 'apps/vars' not found"},
		{name: "a missing optional substituteFrom object has no variables",
			postBuild: &kustomizev1.PostBuild{Substitute: map[string]string{"env": "prod"},
				SubstituteFrom: []kustomizev1.SubstituteReference{from("Secret", "secret-vars", true)}},
			wantVars: map[string]string{"env": "prod"}},
		{name: "a substituteFrom object that cannot be read",
			postBuild: &kustomizev1.PostBuild{SubstituteFrom: []kustomizev1.SubstituteReference{from("ConfigMap", "vars", false)}},
			objs:      []client.Object{vars},
			getErr:    apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "vars", errors.New("denied")),
			// The error is returned untyped, without the object's name
			// that SubstituteFromError would give it.
			wantErr: testutil.Untyped, wantMsg: "configmaps \"vars\" is forbidden"},
		{name: "the decryption keys",
			decryption: &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops"}},
			objs:       []client.Object{sopsKeys},
			change: func(g *WithT, c client.Client) {
				s := sopsKeys.DeepCopy()
				s.Data["identity.agekey"] = []byte("AGE-SECRET-KEY-2")
				g.Expect(c.Update(context.Background(), s)).To(Succeed())
			},
			wantKeys: sopsKeys.Data},
		{name: "decryption without a Secret reads none",
			decryption: &kustomizev1.Decryption{Provider: "sops"}},
		{name: "a missing decryption Secret fails",
			decryption: &kustomizev1.Decryption{Provider: "sops", SecretRef: &meta.LocalObjectReference{Name: "sops"}},
			wantErr:    testutil.Failing, wantReason: kustomizev1.DecryptionFailedReason,
			wantMsg: "decryption failed: reading the decryption secret 'apps/sops'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := failingGets(tt.getErr, tt.objs...)
			r := &KustomizationReconciler{Client: c, DependencyRequeue: stepRequeue}
			obj := stepKs(func(k *kustomizev1.Kustomization) { k.Spec.PostBuild, k.Spec.Decryption = tt.postBuild, tt.decryption })
			source := gitSource("apps", "app", "main@sha1:2")
			sc := &ksScope{source: source}

			res, err := r.reconcileInputs(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr != testutil.NoError {
				g.Expect(sc.inputs).To(BeNil())
				if tt.wantErr == testutil.Waiting {
					g.Expect(testutil.RequeueAfter(err)).To(Equal(stepRequeue))
				}
				return
			}
			g.Expect(sc.inputs.vars).To(Equal(tt.wantVars))
			g.Expect(sc.inputs.keys).To(Equal(tt.wantKeys))
			g.Expect(sc.inputs.digest).To(MatchRegexp("^[0-9a-f]{64}$"))

			// The digest is stable, and follows the artifact, the spec and
			// what the step read.
			digest := sc.inputs.digest
			again := &ksScope{source: source}
			_, err = r.reconcileInputs(context.Background(), obj, again)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.inputs.digest).To(Equal(digest))
			newRevision := &ksScope{source: gitSource("apps", "app", "main@sha1:3")}
			_, err = r.reconcileInputs(context.Background(), obj, newRevision)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(newRevision.inputs.digest).NotTo(Equal(digest), "a new revision")
			newSpec := &ksScope{source: source}
			_, err = r.reconcileInputs(context.Background(), stepKs(func(k *kustomizev1.Kustomization) {
				k.Spec.PostBuild, k.Spec.Decryption, k.Spec.Force = tt.postBuild, tt.decryption, true
			}), newSpec)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(newSpec.inputs.digest).NotTo(Equal(digest), "a new spec")
			if tt.change != nil {
				tt.change(g, c)
				changed := &ksScope{source: source}
				_, err = r.reconcileInputs(context.Background(), obj, changed)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(changed.inputs.digest).NotTo(Equal(digest), "new values read")
			}
		})
	}
}

// availableDeployment returns the Deployment apps/name, Available when
// available, rolling out otherwise.
func availableDeployment(name string, available bool) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		Status:     appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1},
	}
	if available {
		d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1
		d.Status.Conditions = []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		}
	}
	return d
}

// stateConfigMap returns the ConfigMap apps/name whose label state is
// state, which the health expressions of TestStep_ReconcileHealth judge.
func stateConfigMap(name, state string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: map[string]string{"state": state}}}
}

// TestStep_ReconcileHealth runs the health step alone against a fake
// cluster: without objects to check the Healthy condition goes; objects
// that are all current make it True; objects in progress make the run
// progress (quietly on the revision's first look) with Healthy Unknown,
// and a recheck reads only the objects still pending; a Failed object or
// the timeout fails the run with Healthy False; expressions that do not
// compile stall; an object read earlier in the run is not read again.
func TestStep_ReconcileHealth(t *testing.T) {
	const revision = "main@sha1:2"
	ref := func(kind, name string) health.ObjectRef {
		apiVersion := "v1"
		if kind == "Deployment" {
			apiVersion = "apps/v1"
		}
		return health.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: "apps", Name: name}
	}
	check := func(kind, name string) meta.NamespacedObjectKindReference {
		return meta.NamespacedObjectKindReference{Kind: kind, Name: name}
	}
	stateExprs := []kustomizev1.CustomHealthCheck{{APIVersion: "v1", Kind: "ConfigMap",
		Current: "metadata.labels.state == 'ok'", Failed: "metadata.labels.state == 'broken'"}}
	key := types.NamespacedName{Namespace: "apps", Name: "app"}
	tests := []struct {
		name         string
		wait         bool
		healthChecks []meta.NamespacedObjectKindReference
		exprs        []kustomizev1.CustomHealthCheck
		inventory    []string // IDs of the ConfigMaps of the status inventory
		objs         []client.Object
		getErr       error
		// live are the objects an earlier step read, by inventory ID.
		live map[string]*unstructured.Unstructured
		// before prepares the reconciler: a health wait under way, say.
		before func(r *KustomizationReconciler)
		// wantPending are the objects a later look waits for; nil when
		// the wait ended.
		wantPending    []health.ObjectRef
		wantErr        testutil.Outcome
		wantReason     string
		wantMsg        string
		wantConditions []string
	}{
		{name: "nothing to check: a stale Healthy goes", wantConditions: []string{}},
		{name: "an available Deployment", healthChecks: []meta.NamespacedObjectKindReference{check("Deployment", "web")},
			objs: []client.Object{availableDeployment("web", true)}, wantConditions: []string{"Healthy=True/Succeeded"}},
		{name: "a Deployment rolling out, on the revision's first look",
			healthChecks: []meta.NamespacedObjectKindReference{check("Deployment", "web"), check("ConfigMap", "settings")},
			objs:         []client.Object{availableDeployment("web", false), stateConfigMap("settings", "pending")},
			wantPending:  []health.ObjectRef{ref("Deployment", "web")},
			wantErr:      testutil.ProgressingQuietly, wantReason: meta.ProgressingReason,
			wantMsg:        "health check of revision 'main@sha1:2' in progress: Deployment/apps/web",
			wantConditions: []string{"Healthy=Unknown/Progressing"}},
		{name: "a Deployment still rolling out on a later look",
			healthChecks: []meta.NamespacedObjectKindReference{check("Deployment", "web")},
			objs:         []client.Object{availableDeployment("web", false)},
			before: func(r *KustomizationReconciler) {
				r.waits.wait(key, revision, []health.ObjectStatus{{Ref: ref("Deployment", "web")}})
			},
			wantPending: []health.ObjectRef{ref("Deployment", "web")},
			wantErr:     testutil.Progressing, wantReason: meta.ProgressingReason,
			wantMsg:        "health check of revision 'main@sha1:2' in progress: Deployment/apps/web",
			wantConditions: []string{"Healthy=Unknown/Progressing"}},
		{name: "a later look reads only the objects still pending",
			healthChecks: []meta.NamespacedObjectKindReference{check("Deployment", "web"), check("Deployment", "gone")},
			objs:         []client.Object{availableDeployment("web", true)},
			before: func(r *KustomizationReconciler) {
				r.waits.wait(key, revision, []health.ObjectStatus{{Ref: ref("Deployment", "web")}})
			},
			wantConditions: []string{"Healthy=True/Succeeded"}},
		{name: "the wait of an older revision starts afresh",
			healthChecks: []meta.NamespacedObjectKindReference{check("Deployment", "web")},
			objs:         []client.Object{availableDeployment("web", false)},
			before: func(r *KustomizationReconciler) {
				r.waits.states = map[types.NamespacedName]healthWait{key: {revision: "main@sha1:1", since: time.Now().Add(-time.Hour)}}
			},
			wantPending: []health.ObjectRef{ref("Deployment", "web")},
			wantErr:     testutil.ProgressingQuietly, wantReason: meta.ProgressingReason, wantMsg: "in progress: Deployment/apps/web",
			wantConditions: []string{"Healthy=Unknown/Progressing"}},
		{name: "a missing object is waited for", healthChecks: []meta.NamespacedObjectKindReference{check("ConfigMap", "later")},
			wantPending: []health.ObjectRef{ref("ConfigMap", "later")},
			wantErr:     testutil.ProgressingQuietly, wantReason: meta.ProgressingReason, wantMsg: "ConfigMap/apps/later",
			wantConditions: []string{"Healthy=Unknown/Progressing"}},
		{name: "past the timeout the check fails",
			healthChecks: []meta.NamespacedObjectKindReference{check("Deployment", "web")},
			objs:         []client.Object{availableDeployment("web", false)},
			before: func(r *KustomizationReconciler) {
				r.waits.states = map[types.NamespacedName]healthWait{key: {revision: revision, since: time.Now().Add(-2 * time.Hour),
					pending: []health.ObjectStatus{{Ref: ref("Deployment", "web")}}}}
			},
			wantErr: testutil.Failing, wantReason: kustomizev1.HealthCheckFailedReason, wantMsg: "timed out",
			wantConditions: []string{"Healthy=False/HealthCheckFailed"}},
		{name: "current by an expression", healthChecks: []meta.NamespacedObjectKindReference{check("ConfigMap", "settings")},
			exprs: stateExprs, objs: []client.Object{stateConfigMap("settings", "ok")},
			wantConditions: []string{"Healthy=True/Succeeded"}},
		{name: "failed by an expression: no wait for the timeout",
			healthChecks: []meta.NamespacedObjectKindReference{check("ConfigMap", "settings"), check("Deployment", "web")},
			exprs:        stateExprs, objs: []client.Object{stateConfigMap("settings", "broken"), availableDeployment("web", false)},
			wantErr: testutil.Failing, wantReason: kustomizev1.HealthCheckFailedReason, wantMsg: "ConfigMap/apps/settings",
			wantConditions: []string{"Healthy=False/HealthCheckFailed"}},
		{name: "expressions that do not compile stall", healthChecks: []meta.NamespacedObjectKindReference{check("ConfigMap", "settings")},
			exprs:   []kustomizev1.CustomHealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: "metadata.("}},
			objs:    []client.Object{stateConfigMap("settings", "ok")},
			wantErr: testutil.Stalled, wantReason: meta.InvalidCELExpressionReason, wantMsg: "current",
			wantConditions: []string{}},
		{name: "spec.wait checks every applied object", wait: true,
			healthChecks: []meta.NamespacedObjectKindReference{check("ConfigMap", "ignored")},
			inventory:    []string{"apps_a__ConfigMap", "apps_b__ConfigMap"},
			exprs:        stateExprs, objs: []client.Object{stateConfigMap("a", "ok"), stateConfigMap("b", "pending")},
			wantPending: []health.ObjectRef{ref("ConfigMap", "b")},
			wantErr:     testutil.ProgressingQuietly, wantReason: meta.ProgressingReason, wantMsg: "in progress: ConfigMap/apps/b",
			wantConditions: []string{"Healthy=Unknown/Progressing"}},
		{name: "an object read earlier in the run is not read again",
			healthChecks: []meta.NamespacedObjectKindReference{check("ConfigMap", "settings")},
			exprs:        stateExprs, objs: []client.Object{stateConfigMap("settings", "pending")},
			live: map[string]*unstructured.Unstructured{"apps_settings__ConfigMap": func() *unstructured.Unstructured {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("v1")
				u.SetKind("ConfigMap")
				u.SetNamespace("apps")
				u.SetName("settings")
				u.SetLabels(map[string]string{"state": "ok"})
				return u
			}()},
			wantConditions: []string{"Healthy=True/Succeeded"}},
		{name: "an object that cannot be read fails", healthChecks: []meta.NamespacedObjectKindReference{check("ConfigMap", "settings")},
			getErr:  apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "settings", errors.New("denied")),
			wantErr: testutil.Failing, wantReason: kustomizev1.HealthCheckFailedReason, wantMsg: "checking health",
			wantConditions: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := failingGets(tt.getErr, tt.objs...)
			r := &KustomizationReconciler{Client: c}
			if tt.before != nil {
				tt.before(r)
			}
			obj := stepKs(func(k *kustomizev1.Kustomization) {
				k.Spec.Wait, k.Spec.HealthChecks, k.Spec.HealthCheckExprs = tt.wait, tt.healthChecks, tt.exprs
				k.Status.LastAttemptedRevision = revision
				var entries []inventory.Entry
				for _, id := range tt.inventory {
					entries = append(entries, inventory.Entry{ID: id, Version: "v1"})
				}
				recordInventory(k, entries)
			})
			if len(tt.healthChecks) == 0 && !tt.wait {
				conditions.MarkTrue(obj, meta.HealthyCondition, meta.SucceededReason, "Health check passed")
			}
			sc := &ksScope{target: &impersonation.Target{Client: c, Mapper: c.RESTMapper()}, live: tt.live}

			res, err := r.reconcileHealth(context.Background(), obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(testutil.ConditionSummary(obj)).To(Equal(tt.wantConditions))
			if h := conditions.Get(obj, meta.HealthyCondition); h != nil && tt.wantErr != testutil.NoError {
				g.Expect(h.Message).To(ContainSubstring(tt.wantMsg), "Healthy says what the run says")
			}
			w, waiting := r.waits.get(key, revision)
			if tt.wantPending == nil {
				g.Expect(waiting).To(BeFalse(), "the wait ended")
				return
			}
			g.Expect(waiting).To(BeTrue())
			g.Expect(health.Refs(w.pending)).To(Equal(tt.wantPending))
			delay := testutil.RequeueAfter(err)
			g.Expect(delay).To(BeNumerically(">", 0))
			g.Expect(delay).To(BeNumerically("<=", maxHealthRecheck+10*time.Millisecond))
		})
	}
}
