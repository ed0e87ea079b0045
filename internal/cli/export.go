package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/shard"
)

func newExportCommand() *cobra.Command {
	f := &verbFlags{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Print objects of the cluster as clean YAML, ready for Git",
		Long: `Print objects of the cluster as YAML documents separated by ---, without
their status and without what the cluster writes (uid, resourceVersion,
creationTimestamp, managedFields, finalizers), so that they can be committed
to Git and applied to another cluster.`,
		Example: `  windlass export source git app > app-source.yaml
  windlass export kustomization --all -n apps > kustomizations.yaml
  windlass export gate sre-approval`,
	}
	f.kube.bind(cmd)
	fs := cmd.PersistentFlags()
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "how long to wait for the cluster")
	fs.BoolVar(&f.all, "all", false, "every object of the kind in the namespace")
	addKindCommands(cmd, func(k objectKind) *cobra.Command {
		return &cobra.Command{
			Use:     k.use("[NAME]"),
			Short:   "Print a " + k.kind + ", or all of the namespace, as YAML",
			Example: kindExamples("export", k, "app > app.yaml", "--all -n apps"),
			Args:    optionalNameArg,
			RunE: func(cmd *cobra.Command, args []string) error {
				if (len(args) == 1) == f.all {
					return errors.New("name one object, or pass --all")
				}
				return f.run(cmd, func(ctx context.Context, c client.Client, w io.Writer) error {
					return exportObjects(ctx, c, cmd.ErrOrStderr(), w, f, k, args)
				})
			},
		}
	})
	return cmd
}

// exportObjects prints the object named, or all of kind k in the
// namespace, by name.
func exportObjects(ctx context.Context, c client.Client, errOut, w io.Writer, f *verbFlags, k objectKind, names []string) error {
	objs, err := f.selected(ctx, c, k, names)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		_, err := fmt.Fprintf(errOut, "no %s objects found in namespace %s\n", k.kind, f.kube.namespace)
		return err
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].GetName() < objs[j].GetName() })
	for _, obj := range objs {
		manifest, err := cleanManifest(obj)
		if err != nil {
			return err
		}
		if err := writeManifest(w, manifest); err != nil {
			return err
		}
	}
	return nil
}

// clusterAnnotations are annotations that the cluster or the command line
// write, which a manifest for Git leaves out.
var clusterAnnotations = []string{
	meta.ReconcileRequestAnnotation,
	meta.ForceRequestAnnotation,
	meta.ResetRequestAnnotation,
	gatingv1alpha1.OpenRequestAnnotation,
	gatingv1alpha1.CloseRequestAnnotation,
	"kubectl.kubernetes.io/last-applied-configuration",
}

// cleanManifest returns obj as a manifest for Git: its apiVersion and kind,
// its name, namespace, labels and annotations (but those the cluster
// writes), and its spec (a Secret's type, data and stringData); no status,
// uid, resourceVersion, creationTimestamp, managedFields or finalizers.
func cleanManifest(obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, cleanScheme)
	if err != nil {
		return nil, fmt.Errorf("exporting %s: %w", obj.GetName(), err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("exporting %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	var full map[string]any
	// Integers stay int64, as in every unstructured object: Helm values
	// may hold numbers that a float64 would round.
	if err := utiljson.Unmarshal(raw, &full); err != nil {
		return nil, fmt.Errorf("exporting %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	metadata := map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}
	if labels := userLabels(obj.GetLabels()); len(labels) > 0 {
		metadata["labels"] = labels
	}
	if annotations := userAnnotations(obj.GetAnnotations()); len(annotations) > 0 {
		metadata["annotations"] = annotations
	}
	out := map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": metadata}
	for _, field := range []string{"spec", "type", "data", "stringData"} {
		if v, ok := full[field]; ok {
			out[field] = v
		}
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// cleanScheme knows the kinds that cleanManifest exports.
var cleanScheme = scheme.New()

// userLabels returns labels without those the cluster writes: the bucket
// of the object (--shards=auto), which Git must not pin.
func userLabels(labels map[string]string) map[string]any {
	out := stringMap(labels)
	delete(out, shard.BucketLabel)
	return out
}

// userAnnotations returns annotations without those the cluster writes.
func userAnnotations(annotations map[string]string) map[string]any {
	out := stringMap(annotations)
	for _, a := range clusterAnnotations {
		delete(out, a)
	}
	return out
}

// stringMap returns m with values of type any, as unstructured objects
// hold them.
func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// writeManifest writes manifest as a YAML document that starts with ---.
func writeManifest(w io.Writer, manifest *unstructured.Unstructured) error {
	b, err := yaml.Marshal(manifest.Object)
	if err != nil {
		return fmt.Errorf("printing %s %s: %w", manifest.GetKind(), manifest.GetName(), err)
	}
	_, err = fmt.Fprintf(w, "---\n%s", b)
	return err
}
