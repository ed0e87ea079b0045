package install

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	apimeta "github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/monitoring"
)

// UninstallOptions say what Uninstall removes.
type UninstallOptions struct {
	// Namespace is the installation's namespace.
	Namespace string
	// KeepNamespace keeps the namespace (and what else it holds).
	KeepNamespace bool
	// KeepCRDs keeps the CRDs, and so the Windlass objects: only those of
	// Namespace lose their finalizers, since the objects of other
	// namespaces may be served by another installation.
	KeepCRDs bool
	// DeleteApplied deletes the Kustomizations and HelmReleases first,
	// while the controllers still run, and waits until they have deleted
	// what they applied and uninstalled the releases (their finalizers).
	// Otherwise the finalizers are removed and what they applied stays in
	// the cluster.
	DeleteApplied bool
	// DryRun says what would be done and does nothing.
	DryRun bool
	// Timeout bounds each wait.
	Timeout time.Duration
	// Progress receives one line per step ("✔ Deployment ns/windlass
	// deleted"); nil discards them.
	Progress func(line string)
}

// protectedNamespaces are never deleted, even when Windlass was installed
// into them.
var protectedNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// installedKinds are the kinds of namespaced and cluster-scoped objects
// that an installation holds besides its Deployments, CRDs and Namespace,
// in the order Uninstall deletes them.
var installedKinds = []schema.GroupVersionKind{
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Version: "v1", Kind: "Service"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	// --monitoring's; a cluster without the Prometheus Operator has no
	// such kinds, which Uninstall skips.
	{Group: "monitoring.coreos.com", Version: "v1", Kind: monitoring.PodMonitorKind},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: monitoring.PrometheusRuleKind},
	{Version: "v1", Kind: "ConfigMap"},
}

// deploymentKind is the kind of the controllers' workloads.
var deploymentKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// uninstaller runs one Uninstall.
type uninstaller struct {
	c    client.Client
	opts UninstallOptions
	// crds are the installation's CRDs, as rendered.
	crds []*unstructured.Unstructured
}

// Uninstall removes the installation of opts.Namespace without pruning
// what its Kustomizations and HelmReleases applied (unless
// opts.DeleteApplied): those first with DeleteApplied, then the Deployments (waiting
// until their pods are gone, so that no controller puts a finalizer back),
// then the finalizers of the Windlass objects, then the Service,
// NetworkPolicy, RBAC, CRDs and Namespace.
func Uninstall(ctx context.Context, c client.Client, opts UninstallOptions) error {
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	if opts.Progress == nil {
		opts.Progress = func(string) {}
	}
	crds, err := CRDs()
	if err != nil {
		return err
	}
	u := &uninstaller{c: c, opts: opts, crds: crds}
	steps := []func(context.Context) error{u.findInstallation, u.deleteApplied, u.deleteDeployments, u.removeFinalizers, u.deleteRest, u.deleteCRDs, u.deleteNamespace}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// CRDs returns the CRDs that an installation holds.
func CRDs() ([]*unstructured.Unstructured, error) {
	m, err := Render(Options{Version: DefaultVersion("")})
	if err != nil {
		return nil, err
	}
	objs, err := m.Objects()
	if err != nil {
		return nil, err
	}
	var crds []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		}
	}
	return crds, nil
}

// findInstallation refuses to go on when the namespace holds no
// installation: its Namespace labelled by install, or a Deployment of it.
// A mistyped -n then deletes nothing, neither that namespace nor the CRDs.
func (u *uninstaller) findInstallation(ctx context.Context) error {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	err := u.c.Get(ctx, client.ObjectKey{Name: u.opts.Namespace}, ns)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading Namespace %s: %w", u.opts.Namespace, err)
	}
	if err == nil && ns.Labels[NamespaceLabel] == u.opts.Namespace {
		return nil
	}
	deployments, err := u.installed(ctx, deploymentKind)
	if err != nil {
		return err
	}
	if len(deployments) == 0 {
		return fmt.Errorf("Windlass is not installed in namespace %s: nothing was uninstalled (name the namespace it was installed in with -n)", u.opts.Namespace)
	}
	return nil
}

// say reports one step.
func (u *uninstaller) say(format string, args ...any) {
	u.opts.Progress(fmt.Sprintf(format, args...))
}

// scope returns the namespace the Windlass objects are looked for in: all
// of them, unless the CRDs are kept.
func (u *uninstaller) scope() []client.ListOption {
	if u.opts.KeepCRDs {
		return []client.ListOption{client.InNamespace(u.opts.Namespace)}
	}
	return nil
}

// applier is a kind whose objects put others in the cluster: deleting
// one (with its controller running) removes what it put there.
type applier struct {
	gvk schema.GroupVersionKind
	// what names what goes with an object of the kind.
	what string
}

// appliers are the kinds that DeleteApplied deletes first.
var appliers = []applier{
	{gvk: kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind), what: "what it applied"},
	{gvk: helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind), what: "its Helm release"},
}

// deleteApplied deletes the Kustomizations and HelmReleases, with
// DeleteApplied, and waits until their controllers have deleted what they
// applied and uninstalled the releases.
func (u *uninstaller) deleteApplied(ctx context.Context) error {
	if !u.opts.DeleteApplied {
		return nil
	}
	type deleted struct {
		applier
		obj *metav1.PartialObjectMetadata
	}
	var objs []deleted
	for _, a := range appliers {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(a.gvk.GroupVersion().WithKind(a.gvk.Kind + "List"))
		if err := u.c.List(ctx, list, u.scope()...); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return fmt.Errorf("listing the %ss: %w", a.gvk.Kind, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(a.gvk)
			objs = append(objs, deleted{a, obj})
		}
	}
	for _, d := range objs {
		if u.opts.DryRun {
			u.say("► would delete %s %s/%s and %s", d.gvk.Kind, d.obj.Namespace, d.obj.Name, d.what)
			continue
		}
		if err := client.IgnoreNotFound(u.c.Delete(ctx, d.obj)); err != nil {
			return fmt.Errorf("deleting %s %s/%s: %w", d.gvk.Kind, d.obj.Namespace, d.obj.Name, err)
		}
	}
	if u.opts.DryRun {
		return nil
	}
	for _, d := range objs {
		if err := u.waitGone(ctx, d.obj); err != nil {
			return fmt.Errorf("%s %s/%s still holds its finalizer after %s: is its controller running? (uninstall without --delete-applied leaves what it applied in place)",
				d.gvk.Kind, d.obj.Namespace, d.obj.Name, u.opts.Timeout)
		}
		u.say("✔ %s %s/%s deleted with %s", d.gvk.Kind, d.obj.Namespace, d.obj.Name, d.what)
	}
	return nil
}

// installed returns the objects of kind gvk that the installation holds.
func (u *uninstaller) installed(ctx context.Context, gvk schema.GroupVersionKind) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	labels := client.MatchingLabels{NameLabel: "windlass", NamespaceLabel: u.opts.Namespace}
	if err := u.c.List(ctx, list, labels); err != nil {
		return nil, fmt.Errorf("listing the %ss of the installation: %w", gvk.Kind, err)
	}
	for i := range list.Items {
		list.Items[i].SetGroupVersionKind(gvk)
	}
	return list.Items, nil
}

// deleteDeployments deletes the controllers and waits until their pods
// are gone.
func (u *uninstaller) deleteDeployments(ctx context.Context) error {
	deployments, err := u.installed(ctx, deploymentKind)
	if err != nil {
		return err
	}
	if err := u.deleteAll(ctx, deployments); err != nil || u.opts.DryRun {
		return err
	}
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "PodList"})
	err = u.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := u.c.List(ctx, pods, client.InNamespace(u.opts.Namespace),
			client.MatchingLabels{NameLabel: "windlass", NamespaceLabel: u.opts.Namespace}); err != nil {
			return false, nil //nolint:nilerr // polled again
		}
		return len(pods.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the controllers' pods in %s are still there after %s: run uninstall again once they are gone", u.opts.Namespace, u.opts.Timeout)
	}
	return nil
}

// removeFinalizers removes the Windlass finalizer from every Windlass
// object in scope, so that deleting the CRDs or the namespace prunes
// nothing.
func (u *uninstaller) removeFinalizers(ctx context.Context) error {
	for _, crd := range u.crds {
		gvk, ok := storageKind(crd)
		if !ok {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := u.c.List(ctx, list, u.scope()...); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("listing the %ss: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			if err := u.removeFinalizer(ctx, &list.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeFinalizer removes the Windlass finalizer from obj.
func (u *uninstaller) removeFinalizer(ctx context.Context, obj *unstructured.Unstructured) error {
	if !slices.Contains(obj.GetFinalizers(), apimeta.Finalizer) {
		return nil
	}
	what := fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	if u.opts.DryRun {
		u.say("► would remove the finalizer of %s", what)
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := u.c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		before := obj.DeepCopy()
		obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == apimeta.Finalizer }))
		return u.c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of %s: %w", what, err)
	}
	u.say("✔ finalizer removed from %s", what)
	return nil
}

// deleteRest deletes the Service, NetworkPolicy, RBAC and monitoring
// objects.
func (u *uninstaller) deleteRest(ctx context.Context) error {
	for _, gvk := range installedKinds {
		objs, err := u.installed(ctx, gvk)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return err
		}
		if err := u.deleteAll(ctx, objs); err != nil {
			return err
		}
	}
	return nil
}

// deleteCRDs deletes the CRDs, and with them every Windlass object, and
// waits until they are gone.
func (u *uninstaller) deleteCRDs(ctx context.Context) error {
	if u.opts.KeepCRDs {
		return nil
	}
	var objs []metav1.PartialObjectMetadata
	for _, crd := range u.crds {
		o := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: crd.GetName()}}
		o.SetGroupVersionKind(crd.GroupVersionKind())
		if err := u.c.Get(ctx, client.ObjectKeyFromObject(&o), &o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading CustomResourceDefinition %s: %w", o.Name, err)
		}
		objs = append(objs, o)
	}
	return u.deleteAll(ctx, objs)
}

// deleteNamespace deletes the namespace, unless kept or a system one.
func (u *uninstaller) deleteNamespace(ctx context.Context) error {
	ns := u.opts.Namespace
	if u.opts.KeepNamespace {
		return nil
	}
	if slices.Contains(protectedNamespaces, ns) {
		u.say("► Namespace %s kept: it is a system namespace", ns)
		return nil
	}
	o := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if u.opts.DryRun {
		u.say("► would delete Namespace %s", ns)
		return nil
	}
	if err := u.c.Delete(ctx, &o); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting Namespace %s: %w", ns, err)
	}
	u.say("✔ Namespace %s deleted", ns)
	return nil
}

// deleteAll deletes objs, dependents in the background, and waits until
// they are gone.
func (u *uninstaller) deleteAll(ctx context.Context, objs []metav1.PartialObjectMetadata) error {
	for i := range objs {
		o := &objs[i]
		if u.opts.DryRun {
			u.say("► would delete %s", describe(o))
			continue
		}
		err := u.c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", describe(o), err)
		}
	}
	if u.opts.DryRun {
		return nil
	}
	for i := range objs {
		o := &objs[i]
		if err := u.waitGone(ctx, o); err != nil {
			return fmt.Errorf("%s is still there after %s: %w", describe(o), u.opts.Timeout, err)
		}
		u.say("✔ %s deleted", describe(o))
	}
	return nil
}

// waitGone waits until obj no longer exists.
func (u *uninstaller) waitGone(ctx context.Context, obj client.Object) error {
	probe := &metav1.PartialObjectMetadata{}
	probe.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if probe.GroupVersionKind().Empty() {
		gvks, _, err := u.c.Scheme().ObjectKinds(obj)
		if err != nil {
			return err
		}
		probe.SetGroupVersionKind(gvks[0])
	}
	key := client.ObjectKeyFromObject(obj)
	return u.poll(ctx, func(ctx context.Context) (bool, error) {
		err := u.c.Get(ctx, key, probe)
		return apierrors.IsNotFound(err) || meta.IsNoMatchError(err), nil
	})
}

// poll runs done until it holds, within the timeout.
func (u *uninstaller) poll(ctx context.Context, done wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, u.opts.Timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, PollInterval, true, done)
}

// describe names o as "Kind namespace/name" or "Kind name".
func describe(o client.Object) string {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if o.GetNamespace() == "" {
		return kind + " " + o.GetName()
	}
	return fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName())
}

// storageKind returns the kind a CRD defines, at its storage version.
func storageKind(crd *unstructured.Unstructured) (schema.GroupVersionKind, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); storage {
			name, _ := m["name"].(string)
			return schema.GroupVersionKind{Group: group, Version: name, Kind: kind}, true
		}
	}
	return schema.GroupVersionKind{}, false
}
