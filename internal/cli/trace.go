package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	apimeta "github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/provenance"
)

// traceFlags are the flags of `windlass trace`.
type traceFlags struct {
	kube       kubeFlags
	apiVersion string
}

// The labels with which the controller marks the objects a Kustomization
// applied (see ssa.Owner).
var (
	ownerNameLabel      = kustomizev1.GroupVersion.Group + "/name"
	ownerNamespaceLabel = kustomizev1.GroupVersion.Group + "/namespace"
)

func newTraceCommand() *cobra.Command {
	f := &traceFlags{}
	cmd := &cobra.Command{
		Use:   "trace KIND NAME",
		Short: "Show which Kustomization or HelmRelease, and which source, an object comes from",
		Long: `Find the object KIND NAME (or KIND/NAME) in the namespace -n (KIND is a kind,
resource name or short name, as kubectl takes them; --api-version picks one
when several groups serve it), and show the Kustomization that applied it (from the
labels ` + ownerNameLabel + ` and /namespace that the controller sets):
its path, the revision it applied and whether it is Ready; then that
Kustomization's source: its URL, reference, revision and whether it is
Ready; for a GitRepository, the commit's author, time and subject, and the
ImageUpdateAutomation that made the commit, if one did. An object of a Helm release (the labels ` + helmv2.NameLabel + `
and /namespace) shows its HelmRelease instead: the release, its chart and
the chart version installed, and whether it is Ready; then the chart's
source, a HelmChart and the HelmRepository, GitRepository or Bucket it is
built from, or an OCIRepository. An object that neither applied is reported
as not managed by Windlass.`,
		Example: `  windlass trace deployment web -n demo
  windlass trace ConfigMap/settings -n demo
  windlass trace widget main --api-version example.com/v1 -n demo`,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := traceTarget(args)
			if err != nil {
				return err
			}
			return f.run(cmd.Context(), cmd.OutOrStdout(), kind, name)
		},
	}
	f.kube.bind(cmd)
	cmd.Flags().StringVar(&f.apiVersion, "api-version", "", "the API version (group/version) of KIND, when its name is ambiguous")
	return cmd
}

// traceTarget returns the kind and name of "KIND NAME" or "KIND/NAME".
func traceTarget(args []string) (kind, name string, err error) {
	if len(args) == 2 {
		kind, name = args[0], args[1]
	} else {
		kind, name, _ = strings.Cut(args[0], "/")
	}
	if kind == "" || name == "" || strings.Contains(name, "/") {
		return "", "", errors.New("name the object as KIND NAME or KIND/NAME, for example `windlass trace deployment web`")
	}
	return kind, name, nil
}

// run prints the trace of the object kind name.
func (f *traceFlags) run(ctx context.Context, w io.Writer, kind, name string) error {
	cfg, err := f.kube.restConfig()
	if err != nil {
		return err
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	gvk, namespaced, err := f.resolveKind(cfg, kind)
	if err != nil {
		return err
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	key := client.ObjectKey{Name: name}
	if namespaced {
		key.Namespace = f.kube.namespace
	}
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("%s %s not found%s: check the name and -n", gvk.Kind, name, inNamespace(key.Namespace))
		}
		return fmt.Errorf("reading %s %s%s: %w", gvk.Kind, name, inNamespace(key.Namespace), err)
	}
	r := &report{w: w}
	r.section(gvk.Kind+"/"+name, "Object")
	r.field("Namespace", key.Namespace)
	labels := obj.GetLabels()
	if hrName, hrNamespace := labels[helmv2.NameLabel], labels[helmv2.NamespaceLabel]; hrName != "" && hrNamespace != "" {
		r.field("Status", "Managed by Windlass")
		return f.traceRelease(ctx, c, r, hrNamespace, hrName)
	}
	ksName, ksNamespace := labels[ownerNameLabel], labels[ownerNamespaceLabel]
	if ksName == "" || ksNamespace == "" {
		r.field("Status", "Not managed by Windlass (it has no "+ownerNameLabel+" label)")
		return r.err
	}
	r.field("Status", "Managed by Windlass")
	return f.traceKustomization(ctx, c, r, ksNamespace, ksName)
}

// traceKustomization prints the Kustomization namespace/name, then its
// source.
func (f *traceFlags) traceKustomization(ctx context.Context, c client.Client, r *report, namespace, name string) error {
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ks); err != nil {
		return fmt.Errorf("reading Kustomization %s/%s, whose labels the object carries: %w", namespace, name, err)
	}
	r.rule()
	r.section(ks.Name, kustomizev1.KustomizationKind)
	r.field("Namespace", ks.Namespace)
	r.field("Path", ks.Spec.Path)
	r.field("Revision", ks.Status.LastAppliedRevision)
	r.readiness(ks)
	if r.err != nil {
		return r.err
	}
	return f.traceSource(ctx, c, r, ks)
}

// traceSource prints the source of ks.
func (f *traceFlags) traceSource(ctx context.Context, c client.Client, r *report, ks *kustomizev1.Kustomization) error {
	ref := ks.Spec.SourceRef
	source := kindRef{kind: ref.Kind, namespace: orNamespace(ref.Namespace, ks.Namespace), name: ref.Name}
	_, err := traceSourceRef(ctx, c, r, source, "Kustomization "+ks.Namespace+"/"+ks.Name)
	return err
}

// traceRelease prints the HelmRelease namespace/name, then the source of
// its chart: its HelmChart and the HelmChart's source, or the
// OCIRepository of its chartRef.
func (f *traceFlags) traceRelease(ctx context.Context, c client.Client, r *report, namespace, name string) error {
	hr := &helmv2.HelmRelease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, hr); err != nil {
		return fmt.Errorf("reading HelmRelease %s/%s, whose labels the object carries: %w", namespace, name, err)
	}
	r.rule()
	r.section(hr.Name, helmv2.HelmReleaseKind)
	r.field("Namespace", hr.Namespace)
	r.field("Release", hr.GetReleaseNamespace()+"/"+hr.GetReleaseName())
	if tmpl := hr.Spec.Chart; tmpl != nil {
		r.field("Chart", tmpl.Spec.Chart)
		r.field("Version", tmpl.Spec.Version)
	}
	r.field("Revision", releaseRevision(hr))
	r.readiness(hr)
	if r.err != nil {
		return r.err
	}
	ref, err := releaseChartSource(hr)
	if err != nil {
		return err
	}
	chart, err := traceSourceRef(ctx, c, r, ref, "HelmRelease "+hr.Namespace+"/"+hr.Name)
	if err != nil {
		return err
	}
	if hc, ok := chart.(*sourcev1.HelmChart); ok {
		_, err = traceSourceRef(ctx, c, r, chartSourceOf(hc), "HelmChart "+hc.Namespace+"/"+hc.Name)
	}
	return err
}

// traceSourceRef prints the source ref, of owner ("Kind namespace/name"),
// and returns it.
func traceSourceRef(ctx context.Context, c client.Client, r *report, ref kindRef, owner string) (reconcilable, error) {
	k, ok := kindOfRef(ref)
	if !ok {
		return nil, fmt.Errorf("the source kind %q of %s is not one this version knows", ref.kind, owner)
	}
	source := k.new()
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.namespace, Name: ref.name}, source); err != nil {
		return nil, fmt.Errorf("reading the source %s %s/%s of %s: %w", ref.kind, ref.namespace, ref.name, owner, err)
	}
	r.rule()
	r.section(source.GetName(), ref.kind)
	r.field("Namespace", source.GetNamespace())
	r.fields(provenance.SourceFields(source))
	r.field("Revision", k.revision(source))
	r.fields(provenance.CommitFields(source))
	r.fields(provenance.ImageUpdateFields(source))
	r.readiness(source)
	return source, r.err
}

// fields writes fields, those with a value.
func (r *report) fields(fields []provenance.Field) {
	for _, f := range fields {
		r.field(f.Label, f.Value)
	}
}

// resolveKind finds the kind that kind names (a kind, a resource name or
// a short name) through discovery, and whether it is namespaced.
func (f *traceFlags) resolveKind(cfg *rest.Config, kind string) (schema.GroupVersionKind, bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return schema.GroupVersionKind{}, false, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dc, func(string) {})
	gvr := schema.GroupVersionResource{Resource: strings.ToLower(kind)}
	if f.apiVersion != "" {
		gv, err := schema.ParseGroupVersion(f.apiVersion)
		if err != nil {
			return schema.GroupVersionKind{}, false, fmt.Errorf("--api-version %q: want group/version, such as apps/v1", f.apiVersion)
		}
		gvr.Group, gvr.Version = gv.Group, gv.Version
	}
	gvk, err := mapper.KindFor(gvr)
	var ambiguous *meta.AmbiguousResourceError
	switch {
	case errors.As(err, &ambiguous):
		return gvk, false, fmt.Errorf("%q names several kinds (%s): pass --api-version to pick one", kind, kindList(ambiguous.MatchingKinds))
	case meta.IsNoMatchError(err):
		return gvk, false, fmt.Errorf("the cluster serves no kind %q%s: check the spelling (kubectl api-resources lists the kinds)", kind, withVersion(f.apiVersion))
	case err != nil:
		return gvk, false, fmt.Errorf("looking up the kind %q: %w", kind, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvk, false, fmt.Errorf("looking up the kind %q: %w", kind, err)
	}
	return gvk, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// kindList returns "group/version, Kind" for each kind, joined.
func kindList(kinds []schema.GroupVersionKind) string {
	names := make([]string, 0, len(kinds))
	for _, k := range kinds {
		names = append(names, k.GroupVersion().String()+" "+k.Kind)
	}
	return strings.Join(names, "; ")
}

// withVersion returns " in apiVersion" when one was given.
func withVersion(apiVersion string) string {
	if apiVersion == "" {
		return ""
	}
	return " in " + apiVersion
}

// inNamespace returns " in namespace ns" for a namespaced object.
func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// report writes the aligned "Label: value" lines of a trace.
type report struct {
	w   io.Writer
	err error
}

// reportWidth is the width of the labels of a report.
const reportWidth = 15

// section starts a part of the report: the object's kind and name.
func (r *report) section(name, kind string) {
	r.line(kind, name)
}

// field writes one line; an empty value writes nothing.
func (r *report) field(label, value string) {
	if value != "" {
		r.line(label, value)
	}
}

// readiness writes the Ready condition of obj and its message.
func (r *report) readiness(obj statusObject) {
	ready := conditions.Get(obj, apimeta.ReadyCondition)
	if ready == nil {
		r.field("Ready", "Unknown")
		return
	}
	r.field("Ready", string(ready.Status))
	r.field("Message", firstLine(ready.Message))
}

// rule separates two sections.
func (r *report) rule() {
	if r.err == nil {
		_, r.err = io.WriteString(r.w, "---\n")
	}
}

func (r *report) line(label, value string) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, "%-*s %s\n", reportWidth, label+":", value)
	}
}
