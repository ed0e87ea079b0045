package kustomize

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/impersonation"
	kspec "github.com/windlass-dev/windlass/internal/kustomization"
	"github.com/windlass-dev/windlass/internal/patch"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// treeFetcher unpacks the files of an artifact's revision, as the source
// controller's storage would: a revision it does not hold is gone from
// storage (fetch.ErrNotFound); err, when set, fails every fetch.
type treeFetcher struct {
	trees   map[string]map[string]string
	err     error
	fetched int
}

func (f *treeFetcher) Fetch(_ context.Context, a meta.Artifact, dir string) error {
	f.fetched++
	if f.err != nil {
		return f.err
	}
	files, ok := f.trees[a.Revision]
	if !ok {
		return fmt.Errorf("%w: %s", fetch.ErrNotFound, a.Path)
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// stepReconciler returns a Kustomization reconciler on the test control
// plane, applying as the controller, with the artifacts of fetcher, and
// the recorder of its events.
func stepReconciler(t *testing.T, g *WithT, fetcher fetch.Fetcher) (*KustomizationReconciler, *events.FakeRecorder) {
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	recorder := events.NewFakeRecorder(100)
	r := &KustomizationReconciler{
		Client:            env.Client,
		Events:            &event.Recorder{Kubernetes: recorder},
		Fetcher:           fetcher,
		Applier:           &impersonation.Factory{Config: env.Config, HTTPClient: httpClient, Scheme: env.Scheme, Mapper: mapper},
		DependencyRequeue: stepRequeue,
	}
	t.Cleanup(r.trees.RemoveAll)
	return r, recorder
}

// storedKs creates the Kustomization "app" of namespace ns, suspended so
// that the controller of the suite leaves it to the test, and returns it
// with the patcher of a run.
func storedKs(g *WithT, ns string, mutate ...func(*kustomizev1.Kustomization)) (*kustomizev1.Kustomization, *patch.Helper) {
	obj := stepKs(append([]func(*kustomizev1.Kustomization){func(k *kustomizev1.Kustomization) {
		k.Namespace, k.Spec.Suspend = ns, true
	}}, mutate...)...)
	g.Expect(env.Client.Create(context.Background(), obj.DeepCopy())).To(Succeed())
	return obj, patch.NewHelper(obj, env.Client)
}

// applyStep runs the target and apply steps of revision with inputs on
// obj, as a run that applies does, and fails the test unless both succeed.
func applyStep(g *WithT, r *KustomizationReconciler, obj *kustomizev1.Kustomization, patcher *patch.Helper, revision, inputs string) {
	ctx := context.Background()
	sc := &ksScope{patcher: patcher, source: gitSource(obj.Namespace, "app", revision), inputs: &buildInputs{digest: inputs}}
	_, err := r.reconcileTarget(ctx, obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.reconcileApply(ctx, obj, sc)
	g.Expect(err).NotTo(HaveOccurred())
	obj.Status.LastAttemptedRevision = revision
}

// cmValue returns the value of ConfigMap ns/name, or "absent".
func cmValue(g *WithT, ns, name string) string {
	var cm corev1.ConfigMap
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return "absent"
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cm.Data["value"]
}

// inventoryNames returns the names of the ConfigMaps of obj's inventory,
// sorted.
func inventoryNames(obj *kustomizev1.Kustomization) []string {
	names := []string{}
	for _, e := range inventoryIDs(obj) {
		_, rest, _ := strings.Cut(e, "_")
		name, _, _ := strings.Cut(rest, "_")
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestStep_ReconcileTarget runs the target step alone against the test
// control plane: it resolves where and as whom to apply (the controller,
// an impersonated service account, a remote cluster's kubeconfig) and
// whether the last complete apply is current there: the same inputs with
// every object as it was left, or a health wait of the revision under way
// (nothing is read then). A kubeconfig that can never work stalls, one
// that cannot be read fails. The step sets no condition.
func TestStep_ReconcileTarget(t *testing.T) {
	const revision = "main@sha1:1"
	tests := []struct {
		name       string
		sa         string
		kubeConfig *meta.KubeConfigReference
		// secret is the data of the Secret "kubeconfig", when set.
		secret func(t *testing.T, g *WithT) map[string][]byte
		// before applies what a row needs, with inputs "inputs-1".
		before func(g *WithT, r *KustomizationReconciler, obj *kustomizev1.Kustomization, patcher *patch.Helper)
		inputs string
		// wantImpersonated is the service account the target acts as.
		wantImpersonated string
		wantHost         bool // the target's host is the control plane's
		wantCurrent      bool
		wantLive         []string // names of the ConfigMaps read
		wantErr          testutil.Outcome
		wantReason       string
		wantMsg          string
	}{
		{name: "the local cluster, as the controller", wantHost: true},
		{name: "a service account is impersonated", sa: "deployer", wantImpersonated: "deployer", wantHost: true},
		{name: "a remote cluster's kubeconfig",
			kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kubeconfig"}},
			secret: func(t *testing.T, g *WithT) map[string][]byte {
				path, err := env.KubeconfigFile(t.TempDir())
				g.Expect(err).NotTo(HaveOccurred())
				data, err := os.ReadFile(path)
				g.Expect(err).NotTo(HaveOccurred())
				return map[string][]byte{"value": data}
			},
			wantHost: true},
		{name: "a kubeconfig Secret that is missing fails",
			kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kubeconfig"}},
			wantErr:    testutil.Failing, wantReason: kustomizev1.ReconciliationFailedReason,
			wantMsg: "reading the kubeconfig secret 'kubeconfig'"},
		{name: "a kubeconfig Secret without the key stalls",
			kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kubeconfig", Key: "config"}},
			secret:     func(*testing.T, *WithT) map[string][]byte { return map[string][]byte{"value": []byte("x")} },
			wantErr:    testutil.Stalled, wantReason: kustomizev1.ReconciliationFailedReason,
			wantMsg: "invalid kubeconfig: secret 'kubeconfig' has no kubeconfig under key 'config'"},
		{name: "a malformed kubeconfig stalls",
			kubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "kubeconfig"}},
			secret:     func(*testing.T, *WithT) map[string][]byte { return map[string][]byte{"value": []byte("{not yaml")} },
			wantErr:    testutil.Stalled, wantReason: kustomizev1.ReconciliationFailedReason, wantMsg: "invalid kubeconfig"},
		{name: "a configMapRef stalls",
			kubeConfig: &meta.KubeConfigReference{ConfigMapRef: &meta.LocalObjectReference{Name: "identity"}},
			wantErr:    testutil.Stalled, wantReason: meta.UnsupportedKubeConfigReason, wantMsg: "configMapRef 'identity'"},
		{name: "the last complete apply is current: its objects are read once", inputs: "inputs-1",
			before: func(g *WithT, r *KustomizationReconciler, obj *kustomizev1.Kustomization, patcher *patch.Helper) {
				applyStep(g, r, obj, patcher, revision, "inputs-1")
			},
			wantHost: true, wantCurrent: true, wantLive: []string{"a", "b"}},
		{name: "new inputs: not current", inputs: "inputs-2",
			before: func(g *WithT, r *KustomizationReconciler, obj *kustomizev1.Kustomization, patcher *patch.Helper) {
				applyStep(g, r, obj, patcher, revision, "inputs-1")
			},
			wantHost: true},
		{name: "an object that drifted: not current", inputs: "inputs-1",
			before: func(g *WithT, r *KustomizationReconciler, obj *kustomizev1.Kustomization, patcher *patch.Helper) {
				applyStep(g, r, obj, patcher, revision, "inputs-1")
				cm := &corev1.ConfigMap{}
				g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: obj.Namespace, Name: "b"}, cm)).To(Succeed())
				cm.Data["value"] = "edited"
				g.Expect(env.Client.Update(context.Background(), cm, client.FieldOwner("kubectl-edit"))).To(Succeed())
			},
			wantHost: true},
		{name: "an object deleted: not current", inputs: "inputs-1",
			before: func(g *WithT, r *KustomizationReconciler, obj *kustomizev1.Kustomization, patcher *patch.Helper) {
				applyStep(g, r, obj, patcher, revision, "inputs-1")
				g.Expect(env.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: objectMeta(obj.Namespace, "a")})).To(Succeed())
			},
			wantHost: true},
		{name: "a health wait of the revision under way: current, nothing read", inputs: "inputs-1",
			before: func(g *WithT, r *KustomizationReconciler, obj *kustomizev1.Kustomization, patcher *patch.Helper) {
				applyStep(g, r, obj, patcher, revision, "inputs-1")
				r.waits.wait(types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, revision, nil)
				g.Expect(env.Client.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: objectMeta(obj.Namespace, "a")})).To(Succeed())
			},
			wantHost: true, wantCurrent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.CreateNamespace(t)
			fetcher := &treeFetcher{trees: map[string]map[string]string{
				revision: {"deploy/a.yaml": configMap(ns, "a", "1"), "deploy/b.yaml": configMap(ns, "b", "1")},
			}}
			r, _ := stepReconciler(t, g, fetcher)
			if tt.secret != nil {
				g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, "kubeconfig"), Data: tt.secret(t, g)})).To(Succeed())
			}
			obj, patcher := storedKs(g, ns, func(k *kustomizev1.Kustomization) {
				k.Spec.ServiceAccountName, k.Spec.KubeConfig = tt.sa, tt.kubeConfig
			})
			if tt.before != nil {
				tt.before(g, r, obj, patcher)
			}
			obj.Status.Conditions = nil
			sc := &ksScope{patcher: patcher, source: gitSource(ns, "app", revision), inputs: &buildInputs{digest: tt.inputs}}

			res, err := r.reconcileTarget(ctx, obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, tt.wantMsg)
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			if tt.wantErr != testutil.NoError {
				g.Expect(sc.target).To(BeNil())
				g.Expect(sc.manager).To(BeNil())
				return
			}
			g.Expect(sc.target).NotTo(BeNil())
			g.Expect(sc.manager).NotTo(BeNil())
			if tt.wantHost {
				g.Expect(strings.TrimSuffix(sc.target.Config.Host, "/")).To(Equal(strings.TrimSuffix(env.Config.Host, "/")))
			}
			wantUser := ""
			if tt.wantImpersonated != "" {
				wantUser = impersonation.ServiceAccountUser(ns, tt.wantImpersonated)
			}
			g.Expect(sc.target.Config.Impersonate.UserName).To(Equal(wantUser))
			g.Expect(sc.current).To(Equal(tt.wantCurrent))
			live := []string{}
			for id := range sc.live {
				live = append(live, strings.TrimSuffix(strings.TrimPrefix(id, ns+"_"), "__ConfigMap"))
			}
			sort.Strings(live)
			if tt.wantLive == nil {
				tt.wantLive = []string{}
			}
			g.Expect(live).To(Equal(tt.wantLive))
		})
	}
}

// TestStep_ReconcileApply runs the apply step alone against the test
// control plane: a new revision is fetched, built and applied, with the
// inventory written before the objects and the changes in an event, and
// the objects that left it are pruned (with spec.prune); a run whose last
// complete apply is current, or whose build is what that apply applied,
// applies nothing. An artifact gone from storage is waited for; a fetch,
// a build, a substitution or an apply the API server refuses fails and
// applies nothing; an empty revision that would prune everything is
// refused unless allowed; a path leaving the source, decryption keys or
// ignore rules that can never work stall. The step sets no condition.
func TestStep_ReconcileApply(t *testing.T) {
	const revision = "main@sha1:2"
	two := func(ns string) map[string]string {
		return map[string]string{"deploy/a.yaml": configMap(ns, "a", "2"), "deploy/b.yaml": configMap(ns, "b", "2")}
	}
	onlyA := func(ns string) map[string]string { return map[string]string{"deploy/a.yaml": configMap(ns, "a", "2")} }
	// applyFirst applies a and b at value 1, as revision main@sha1:1.
	applyFirst := func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper) {
		ns := obj.Namespace
		f.trees["main@sha1:1"] = map[string]string{"deploy/a.yaml": configMap(ns, "a", "1"), "deploy/b.yaml": configMap(ns, "b", "1")}
		applyStep(g, r, obj, patcher, "main@sha1:1", "inputs-1")
	}
	tests := []struct {
		name  string
		files func(ns string) map[string]string // the tree of the revision; nil: gone from storage
		// before applies what a row needs and changes the run's scope.
		before   func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, sc *ksScope)
		mutate   func(obj *kustomizev1.Kustomization)
		fetchErr error
		// wantValues are the ConfigMaps' values in the cluster afterwards
		// ("absent" for none).
		wantValues map[string]string
		// wantInventory are the names of the inventory's ConfigMaps.
		wantInventory []string
		// wantEvents are parts of the events of the changes, one each,
		// with NS for the namespace.
		wantEvents []string
		wantErr    testutil.Outcome
		wantReason string
		wantMsg    string
	}{
		{name: "a new revision is applied", files: two,
			wantValues: map[string]string{"a": "2", "b": "2"}, wantInventory: []string{"a", "b"},
			wantEvents: []string{"ConfigMap/NS/a created\nConfigMap/NS/b created\nrevision: main@sha1:2"}},
		{name: "the last complete apply is current: nothing fetched or applied", files: two,
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, sc *ksScope) {
				applyFirst(g, r, f, obj, patcher)
				sc.current = true
				f.err, f.fetched = errors.New("no fetch expected"), 0
			},
			wantValues: map[string]string{"a": "1", "b": "1"}, wantInventory: []string{"a", "b"}},
		{name: "the same objects as the last apply: nothing applied",
			files: func(ns string) map[string]string {
				return map[string]string{"deploy/a.yaml": configMap(ns, "a", "1"), "deploy/b.yaml": configMap(ns, "b", "1")}
			},
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "1", "b": "1"}, wantInventory: []string{"a", "b"}},
		{name: "a new object of a later revision is applied, written to the inventory first",
			files: func(ns string) map[string]string {
				return map[string]string{"deploy/a.yaml": configMap(ns, "a", "1"), "deploy/b.yaml": configMap(ns, "b", "1"),
					"deploy/c.yaml": configMap(ns, "c", "2")}
			},
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "1", "b": "1", "c": "2"}, wantInventory: []string{"a", "b", "c"},
			wantEvents: []string{"ConfigMap/NS/c created"}},
		{name: "a changed object is applied again", files: two,
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "2", "b": "2"}, wantInventory: []string{"a", "b"},
			wantEvents: []string{"ConfigMap/NS/a configured\nConfigMap/NS/b configured"}},
		{name: "an object that left the source is pruned", files: onlyA,
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "2", "b": "absent"}, wantInventory: []string{"a"},
			wantEvents: []string{"ConfigMap/NS/a configured", "ConfigMap/NS/b deleted"}},
		{name: "without spec.prune it stays, out of the inventory", files: onlyA,
			mutate: func(k *kustomizev1.Kustomization) { k.Spec.Prune = false },
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "2", "b": "1"}, wantInventory: []string{"a"},
			wantEvents: []string{"ConfigMap/NS/a configured"}},
		{name: "an empty revision is refused while objects are applied",
			files: func(string) map[string]string {
				return map[string]string{"deploy/kustomization.yaml": "resources: []\n"}
			},
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "1", "b": "1"}, wantInventory: []string{"a", "b"},
			wantErr: testutil.Failing, wantReason: kustomizev1.EmptySourceReason,
			wantMsg: "revision 'main@sha1:2' has no objects at './deploy': refusing to prune the 2 objects applied"},
		{name: "an empty revision, allowed, prunes everything",
			files: func(string) map[string]string {
				return map[string]string{"deploy/kustomization.yaml": "resources: []\n"}
			},
			mutate: func(k *kustomizev1.Kustomization) {
				k.Annotations = map[string]string{kustomizev1.AllowEmptyAnnotation: "true"}
			},
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "absent", "b": "absent"}, wantInventory: []string{},
			wantEvents: []string{"ConfigMap/NS/a deleted\nConfigMap/NS/b deleted"}},
		{name: "an artifact gone from storage is waited for",
			wantValues: map[string]string{"a": "absent"}, wantInventory: []string{},
			wantErr: testutil.Waiting, wantReason: kustomizev1.ArtifactFailedReason,
			wantMsg: "artifact for revision 'main@sha1:2' is gone from storage"},
		{name: "an artifact that cannot be fetched fails", files: two, fetchErr: errors.New("connection refused"),
			wantValues: map[string]string{"a": "absent"}, wantInventory: []string{},
			wantErr: testutil.Failing, wantReason: kustomizev1.ArtifactFailedReason,
			wantMsg: "fetching the artifact of revision 'main@sha1:2': connection refused"},
		{name: "a path that leaves the source stalls", files: two,
			mutate:     func(k *kustomizev1.Kustomization) { k.Spec.Path = "../other" },
			wantValues: map[string]string{"a": "absent"}, wantInventory: []string{},
			wantErr: testutil.Stalled, wantReason: meta.InvalidPathReason, wantMsg: "path '../other' leaves the source's root"},
		{name: "a build error fails",
			files: func(string) map[string]string {
				return map[string]string{"deploy/kustomization.yaml": "resources:\n- missing.yaml\n"}
			},
			wantValues: map[string]string{"a": "absent"}, wantInventory: []string{},
			wantErr: testutil.Failing, wantReason: kustomizev1.BuildFailedReason, wantMsg: "missing.yaml"},
		{name: "a substitution error fails", files: func(ns string) map[string]string {
			return map[string]string{"deploy/a.yaml": configMap(ns, "a", "${unset}")}
		},
			mutate: func(k *kustomizev1.Kustomization) {
				k.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"set": "1"}}
			},
			before: func(_ *WithT, _ *KustomizationReconciler, _ *treeFetcher, _ *kustomizev1.Kustomization, _ *patch.Helper, sc *ksScope) {
				sc.inputs.vars = map[string]string{"set": "1"}
			},
			wantValues: map[string]string{"a": "absent"}, wantInventory: []string{},
			wantErr: testutil.Failing, wantReason: kustomizev1.SubstitutionFailedReason, wantMsg: "unset"},
		{name: "decryption keys that can never work stall", files: two,
			mutate: func(k *kustomizev1.Kustomization) { k.Spec.Decryption = &kustomizev1.Decryption{Provider: "sops"} },
			before: func(_ *WithT, _ *KustomizationReconciler, _ *treeFetcher, _ *kustomizev1.Kustomization, _ *patch.Helper, sc *ksScope) {
				sc.inputs.keys = map[string][]byte{"identity.agekey": []byte("not a key")}
			},
			wantValues: map[string]string{"a": "absent"}, wantInventory: []string{},
			wantErr: testutil.Stalled, wantReason: kustomizev1.DecryptionFailedReason, wantMsg: "invalid decryption keys"},
		{name: "ignore rules that can never work stall", files: two,
			mutate: func(k *kustomizev1.Kustomization) {
				k.Spec.Ignore = []kustomizev1.IgnoreRule{{Paths: []string{"data"}}}
			},
			wantValues: map[string]string{"a": "absent"}, wantInventory: []string{},
			wantErr: testutil.Stalled, wantReason: kustomizev1.ReconciliationFailedReason, wantMsg: "invalid JSON pointer 'data'"},
		{name: "an object the dry run refuses: nothing is applied",
			files: func(ns string) map[string]string {
				return map[string]string{"deploy/a.yaml": configMap(ns, "a", "2"), "deploy/b.yaml": configMap(ns, "b", "1"),
					"deploy/bad.yaml": invalidDeployment(ns)}
			},
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "1", "b": "1"}, wantInventory: []string{"a", "b"},
			wantErr: testutil.Failing, wantReason: kustomizev1.ValidationFailedReason,
			wantMsg: "dry-run failed: Deployment/NS/bad"},
		{name: "a first apply with an object the API server refuses: the others are applied and kept",
			files: func(ns string) map[string]string {
				return map[string]string{"deploy/a.yaml": configMap(ns, "a", "2"), "deploy/bad.yaml": invalidDeployment(ns)}
			},
			wantValues: map[string]string{"a": "2"}, wantEvents: []string{"ConfigMap/NS/a created"}, wantInventory: []string{"a"},
			wantErr: testutil.Failing, wantReason: kustomizev1.ValidationFailedReason,
			wantMsg: "apply refused: Deployment/NS/bad"},
		{name: "an object refused past the dry run: what was applied stays in the inventory",
			files: func(ns string) map[string]string {
				// The dry run allocates no node port, so it cannot see
				// that this one is out of range. The inventory keeps what
				// was written ahead of the apply, the refused object too.
				return map[string]string{"deploy/a.yaml": configMap(ns, "a", "2"), "deploy/b.yaml": configMap(ns, "b", "1"),
					"deploy/bad.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: bad\n  namespace: " + ns +
						"\nspec:\n  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 1\n"}
			},
			before: func(g *WithT, r *KustomizationReconciler, f *treeFetcher, obj *kustomizev1.Kustomization, patcher *patch.Helper, _ *ksScope) {
				applyFirst(g, r, f, obj, patcher)
			},
			wantValues: map[string]string{"a": "2", "b": "1"}, wantEvents: []string{"ConfigMap/NS/a configured"},
			wantErr: testutil.Failing, wantReason: kustomizev1.ReconciliationFailedReason,
			wantInventory: []string{"a", "b", "bad"},
			wantMsg:       "apply failed: Service/NS/bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.CreateNamespace(t)
			fetcher := &treeFetcher{trees: map[string]map[string]string{}}
			if tt.files != nil {
				fetcher.trees[revision] = tt.files(ns)
			}
			r, recorder := stepReconciler(t, g, fetcher)
			obj, patcher := storedKs(g, ns, func(k *kustomizev1.Kustomization) {
				if tt.mutate != nil {
					tt.mutate(k)
				}
			})
			source := gitSource(ns, "app", revision)
			source.Status.Artifact.Metadata = map[string]string{meta.OriginRevisionKey: "sha1:origin"}
			sc := &ksScope{patcher: patcher, source: source, inputs: &buildInputs{digest: "inputs-2"}}
			if tt.before != nil {
				tt.before(g, r, fetcher, obj, patcher, sc)
			}
			if !sc.current {
				tgt, err := r.target(ctx, obj)
				g.Expect(err).NotTo(HaveOccurred())
				sc.target = tgt
				sc.manager, err = r.applyManager(obj, tgt)
				g.Expect(err).NotTo(HaveOccurred())
			}
			fetcher.err = tt.fetchErr
			for len(recorder.Events) > 0 {
				<-recorder.Events
			}
			lastApplied := obj.Status.LastAppliedRevision
			live := sc.live
			fresh := len(kspec.Inventory(obj)) == 0

			res, err := r.reconcileApply(ctx, obj, sc)
			testutil.ExpectOutcome(g, res, err, tt.wantErr, tt.wantReason, strings.ReplaceAll(tt.wantMsg, "NS", ns))
			g.Expect(obj.Status.Conditions).To(BeEmpty())
			for name, value := range tt.wantValues {
				g.Expect(cmValue(g, ns, name)).To(Equal(value), "ConfigMap %s", name)
			}
			g.Expect(inventoryNames(obj)).To(Equal(tt.wantInventory))
			var recorded []string
			for len(recorder.Events) > 0 {
				recorded = append(recorded, <-recorder.Events)
			}
			want := make([]any, 0, len(tt.wantEvents))
			for _, e := range tt.wantEvents {
				want = append(want, ContainSubstring(strings.ReplaceAll(e, "NS", ns)))
			}
			g.Expect(recorded).To(ConsistOf(want...))
			if tt.wantErr != testutil.NoError {
				g.Expect(obj.Status.LastAppliedRevision).To(Equal(lastApplied))
				if tt.wantErr == testutil.Waiting {
					g.Expect(testutil.RequeueAfter(err)).To(Equal(stepRequeue))
				}
				return
			}
			g.Expect(obj.Status.LastAppliedRevision).To(Equal(revision))
			g.Expect(obj.Status.LastAppliedOriginRevision).To(Equal("sha1:origin"))
			if sc.current {
				g.Expect(fetcher.fetched).To(BeZero())
				g.Expect(sc.live).To(Equal(live))
				return
			}
			// The objects applied are remembered, and handed to the health
			// checks as they are now.
			state, ok := r.applied.get(types.NamespacedName{Namespace: ns, Name: "app"})
			g.Expect(ok).To(BeTrue())
			g.Expect(state.inputs).To(Equal("inputs-2"))
			g.Expect(sc.live).To(HaveLen(len(tt.wantInventory)))
			// The inventory reached the API server before new objects did,
			// unless nothing was applied before: a first apply writes it
			// with the run's status only.
			stored := &kustomizev1.Kustomization{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, stored)).To(Succeed())
			switch {
			case fresh:
				g.Expect(stored.Status.Inventory).To(BeNil(), "a first apply writes nothing ahead")
			case len(tt.wantEvents) > 0 && strings.Contains(tt.wantEvents[0], "created"):
				g.Expect(inventoryNames(stored)).To(Equal(tt.wantInventory))
			}
		})
	}
}

// invalidDeployment is a Deployment in ns that the API server refuses: it
// has no containers.
func invalidDeployment(ns string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: bad\n  namespace: " + ns +
		"\nspec:\n  selector:\n    matchLabels: {app: bad}\n  template:\n    metadata:\n      labels: {app: bad}\n" +
		"    spec:\n      containers: []\n"
}
