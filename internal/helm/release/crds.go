package release

import (
	"context"
	"fmt"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

// crdEstablishTimeout bounds the wait for applied CRDs to be served, as the
// Helm SDK bounds it.
const crdEstablishTimeout = time.Minute

var (
	crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// crdPolicy validates a CRDs policy; empty is def.
func crdPolicy(policy, def string) (string, error) {
	switch policy {
	case "":
		return def, nil
	case helmv2.CRDsSkip, helmv2.CRDsCreate, helmv2.CRDsCreateReplace:
		return policy, nil
	default:
		return "", fmt.Errorf("unknown CRDs policy %q (want %s, %s or %s)", policy, helmv2.CRDsSkip, helmv2.CRDsCreate, helmv2.CRDsCreateReplace)
	}
}

// applyCRDs applies the CRDs in the crds/ folders of ch and its subcharts
// as policy says: Create creates the missing ones, CreateReplace also
// replaces the others. It waits until the CRDs it created or changed are
// established and discovery serves their kinds, and then makes the Getter
// forget what it discovered.
func (r *Runner) applyCRDs(ctx context.Context, ch *chart.Chart, policy string) error {
	if policy == helmv2.CRDsSkip {
		return nil
	}
	files := ch.CRDObjects()
	if len(files) == 0 {
		return nil
	}
	if r.getter == nil {
		return errNoCluster
	}
	client := r.getter.dynamic.Resource(crdGVR)
	var changed []string
	for _, f := range files {
		objs, err := ObjectsOf(string(f.File.Data))
		if err != nil {
			return fmt.Errorf("reading the CRDs of %s: %w", f.Filename, err)
		}
		for _, obj := range objs {
			if obj.GroupVersionKind() != crdGVK {
				return fmt.Errorf("%s holds a %s, not an apiextensions.k8s.io/v1 CustomResourceDefinition", f.Filename, obj.GroupVersionKind())
			}
			did, err := applyCRD(ctx, client, obj, policy == helmv2.CRDsCreateReplace)
			if err != nil {
				return fmt.Errorf("applying CRD %s from %s: %w", obj.GetName(), f.Filename, err)
			}
			if did {
				changed = append(changed, obj.GetName())
			}
		}
	}
	if len(changed) == 0 {
		return nil
	}
	defer r.getter.Invalidate()
	crds, err := waitEstablished(ctx, client, changed)
	if err != nil {
		return err
	}
	return waitDiscoverable(ctx, r.getter.clientset.Discovery(), crds)
}

// applyCRD creates crd, or replaces the one that exists when replace is
// set; it reports whether the cluster's CRD changed.
func applyCRD(ctx context.Context, client dynamic.ResourceInterface, crd *unstructured.Unstructured, replace bool) (bool, error) {
	_, err := client.Create(ctx, crd, metav1.CreateOptions{})
	if err == nil {
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, err
	}
	if !replace {
		return false, nil
	}
	changed := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := client.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.SetResourceVersion(existing.GetResourceVersion())
		updated, err := client.Update(ctx, crd, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		// An update that changes nothing keeps the resource version.
		changed = updated.GetResourceVersion() != existing.GetResourceVersion()
		return nil
	})
	return changed, err
}

// waitEstablished waits until the CRDs called names are established, and
// returns them as they are then.
func waitEstablished(ctx context.Context, client dynamic.ResourceInterface, names []string) ([]*unstructured.Unstructured, error) {
	crds := make([]*unstructured.Unstructured, 0, len(names))
	for _, name := range names {
		var crd *unstructured.Unstructured
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdEstablishTimeout, true,
			func(ctx context.Context) (bool, error) {
				var err error
				if crd, err = client.Get(ctx, name, metav1.GetOptions{}); err != nil {
					return false, err
				}
				return established(crd), nil
			})
		if err != nil {
			return nil, fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// waitDiscoverable waits until discovery lists the resource of each served
// version of crds: the API server updates its discovery documents after a
// CRD is established, and an action that maps the chart's objects before
// that would not find their kind.
func waitDiscoverable(ctx context.Context, disc discovery.DiscoveryInterface, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		for _, gv := range servedVersions(crd) {
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdEstablishTimeout, true,
				func(context.Context) (bool, error) {
					list, err := disc.ServerResourcesForGroupVersion(gv.String())
					if err != nil {
						return false, nil //nolint:nilerr // not served yet: ask again
					}
					for _, res := range list.APIResources {
						if res.Name == plural {
							return true, nil
						}
					}
					return false, nil
				})
			if err != nil {
				return fmt.Errorf("waiting for discovery to serve %s of CRD %s: %w", gv, crd.GetName(), err)
			}
		}
	}
	return nil
}

// servedVersions returns the group versions that crd serves.
func servedVersions(crd *unstructured.Unstructured) []schema.GroupVersion {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []schema.GroupVersion
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if name, _ := m["name"].(string); ok && name != "" && m["served"] == true {
			out = append(out, schema.GroupVersion{Group: group, Version: name})
		}
	}
	return out
}

// established reports whether crd has the condition Established=True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
