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

// CheckUpgradeAccess tells whether the Runner's identity may upgrade rel
// as it stands: read and patch every object of its manifest, and write the
// release's records in the storage namespace. The API server answers for
// the identity (SelfSubjectAccessReview), so nothing is written when a
// right is missing: the error names the first right refused. Hooks are not
// checked: they are made afresh by the upgrade.
func (r *Runner) CheckUpgradeAccess(ctx context.Context, rel *releasev1.Release) error {
	if r.getter == nil {
		return errNoCluster
	}
	if rel == nil {
		return nil
	}
	needed, err := r.upgradeAccess(rel)
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

// upgradeAccess lists the rights that upgrading rel needs.
func (r *Runner) upgradeAccess(rel *releasev1.Release) ([]access, error) {
	record := "sh.helm.release.v1." + rel.Name + ".v" + strconv.Itoa(rel.Version)
	needed := []access{
		{verb: "create", resource: "secrets", namespace: r.storageNamespace, what: "the release's records (Secrets) in namespace " + r.storageNamespace},
		{verb: "update", resource: "secrets", namespace: r.storageNamespace, name: record, what: "Secret " + r.storageNamespace + "/" + record},
	}
	objs, err := ObjectsOf(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of release %s v%d: %w", rel.Name, rel.Version, err)
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := r.getter.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("mapping %s %s of release %s: %w", gvk.Kind, o.GetName(), rel.Name, err)
		}
		ns, what := "", gvk.Kind+" "+o.GetName()
		if mapping.Scope.Name() == apimeta.RESTScopeNameNamespace {
			if ns = o.GetNamespace(); ns == "" {
				ns = rel.Namespace
			}
			what = gvk.Kind + " " + ns + "/" + o.GetName()
		}
		for _, verb := range []string{"get", "patch"} {
			needed = append(needed, access{verb: verb, group: mapping.Resource.Group, resource: mapping.Resource.Resource,
				namespace: ns, name: o.GetName(), what: what})
		}
	}
	return needed, nil
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
