package release

import (
	"context"
	"fmt"
	"strconv"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// access is one right that an action needs: verb on one object (or on any
// object of its resource when name is empty).
type access struct {
	verb, group, resource, namespace, name string
	// what names the object in an error: "ConfigMap apps/app-cm".
	what string
}

// CheckUpgradeAccess tells whether the Runner's identity may upgrade rel to
// the manifest next (rel's own when empty): read and patch the objects of
// next, create those that rel does not have, delete those of rel that next
// drops, and write the release's records in the storage namespace. The API
// server answers for the identity (SelfSubjectAccessReview), so nothing is
// written when a right is missing: the error names the first right
// refused. Hooks are not checked.
func (r *Runner) CheckUpgradeAccess(ctx context.Context, rel *releasev1.Release, next string) error {
	if r.getter == nil {
		return errNoCluster
	}
	if rel == nil {
		return nil
	}
	if next == "" {
		next = rel.Manifest
	}
	needed, err := r.upgradeAccess(rel, next)
	if err != nil {
		return err
	}
	for _, a := range needed {
		if err := r.checkAccess(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// upgradeAccess lists the rights that upgrading rel to the manifest next
// needs.
func (r *Runner) upgradeAccess(rel *releasev1.Release, next string) ([]access, error) {
	record := "sh.helm.release.v1." + rel.Name + ".v" + strconv.Itoa(rel.Version)
	needed := []access{
		{verb: "create", resource: "secrets", namespace: r.storageNamespace, what: "the release's records (Secrets) in namespace " + r.storageNamespace},
		{verb: "update", resource: "secrets", namespace: r.storageNamespace, name: record, what: "Secret " + r.storageNamespace + "/" + record},
	}
	have, err := r.manifestObjects(rel, rel.Manifest)
	if err != nil {
		return nil, err
	}
	want, err := r.manifestObjects(rel, next)
	if err != nil {
		return nil, err
	}
	had, keeps := keys(have), keys(want)
	for _, o := range want {
		verbs := []string{"get", "patch"}
		if !had[o.key()] {
			verbs = append(verbs, "create")
		}
		for _, verb := range verbs {
			o.verb = verb
			needed = append(needed, o)
		}
	}
	for _, o := range have {
		if !keeps[o.key()] {
			o.verb = "delete"
			needed = append(needed, o)
		}
	}
	return needed, nil
}

// key identifies the object of a right.
func (a access) key() string {
	return a.group + "/" + a.resource + "/" + a.namespace + "/" + a.name
}

// keys returns the set of the objects of rights.
func keys(rights []access) map[string]bool {
	out := make(map[string]bool, len(rights))
	for _, a := range rights {
		out[a.key()] = true
	}
	return out
}

// manifestObjects returns the objects of manifest, a manifest of rel, in
// order, as rights without a verb.
func (r *Runner) manifestObjects(rel *releasev1.Release, manifest string) ([]access, error) {
	objs, err := ObjectsOf(manifest)
	if err != nil {
		return nil, fmt.Errorf("reading a manifest of release %s: %w", rel.Name, err)
	}
	out := make([]access, 0, len(objs))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := r.getter.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("mapping %s %s of release %s: %w", gvk.Kind, o.GetName(), rel.Name, err)
		}
		a := access{group: mapping.Resource.Group, resource: mapping.Resource.Resource, name: o.GetName(), what: gvk.Kind + " " + o.GetName()}
		if mapping.Scope.Name() == apimeta.RESTScopeNameNamespace {
			if a.namespace = o.GetNamespace(); a.namespace == "" {
				a.namespace = rel.Namespace
			}
			a.what = gvk.Kind + " " + a.namespace + "/" + o.GetName()
		}
		out = append(out, a)
	}
	return out, nil
}

// checkAccess asks the API server whether the identity has right a.
func (r *Runner) checkAccess(ctx context.Context, a access) error {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Namespace: a.namespace, Name: a.name,
		},
	}}
	res, err := r.getter.clientset.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking whether the identity may %s %s: %w", a.verb, a.what, err)
	}
	if !res.Status.Allowed {
		return fmt.Errorf("the identity may not %s %s", a.verb, a.what)
	}
	return nil
}
