package install

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MinKubernetesVersion is the oldest Kubernetes that Windlass supports.
const MinKubernetesVersion = "1.32.0"

// Check is the outcome of one check.
type Check struct {
	// OK says whether it passed.
	OK bool
	// Message says what was found.
	Message string
	// Fix says what to do, when it failed.
	Fix string
}

// String returns the check as one line: "✔ message", or
// "✗ message: fix".
func (c Check) String() string {
	if c.OK {
		return "✔ " + c.Message
	}
	if c.Fix == "" {
		return "✗ " + c.Message
	}
	return "✗ " + c.Message + ": " + c.Fix
}

// Passed reports whether every check passed.
func Passed(checks []Check) bool {
	for _, c := range checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// VersionCheck checks that the server's Kubernetes version is at least
// MinKubernetesVersion.
func VersionCheck(info *version.Info) Check {
	v, err := serverVersion(info)
	if err != nil {
		return Check{Message: fmt.Sprintf("the Kubernetes version %q cannot be read", info.GitVersion), Fix: err.Error()}
	}
	minimum := utilversion.MustParseGeneric(MinKubernetesVersion)
	if !v.AtLeast(minimum) {
		return Check{Message: fmt.Sprintf("Kubernetes %s is older than %s", v, minimum), Fix: "upgrade the cluster to Kubernetes " + MinKubernetesVersion + " or later"}
	}
	return Check{OK: true, Message: fmt.Sprintf("Kubernetes %s >= %s", v, minimum)}
}

// serverVersion reads the server's version: its git version, or its major
// and minor numbers when the git version is not a release (a server built
// from source says v0.0.0-master).
func serverVersion(info *version.Info) (*utilversion.Version, error) {
	if v, err := utilversion.ParseGeneric(info.GitVersion); err == nil && v.Major() > 0 {
		return v, nil
	}
	minor := strings.TrimSuffix(info.Minor, "+")
	return utilversion.ParseGeneric(info.Major + "." + minor + ".0")
}

// access is one permission that an installation needs.
type access struct {
	what     string
	group    string
	resource string
	// namespaced is true for resources created in the installation's
	// namespace.
	namespaced bool
}

// installAccess are the permissions the installing user needs.
var installAccess = []access{
	{what: "CustomResourceDefinitions", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
	{what: "ClusterRoles", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
	{what: "Deployments", group: "apps", resource: "deployments", namespaced: true},
}

// AccessChecks asks the API server whether the user may create what an
// installation in namespace holds (SelfSubjectAccessReview).
func AccessChecks(ctx context.Context, c client.Client, namespace string) []Check {
	out := make([]Check, 0, len(installAccess))
	for _, a := range installAccess {
		ns, where := "", ""
		if a.namespaced {
			ns, where = namespace, " in namespace "+namespace
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: a.group, Resource: a.resource},
		}}
		what := "may create " + a.what + where
		switch err := c.Create(ctx, review); {
		case err != nil:
			out = append(out, Check{Message: "cannot tell whether you " + what, Fix: err.Error()})
		case review.Status.Allowed:
			out = append(out, Check{OK: true, Message: "you " + what})
		default:
			out = append(out, Check{Message: "you may not create " + a.what + where,
				Fix: "ask a cluster administrator for the permission (installing Windlass needs cluster-admin)"})
		}
	}
	return out
}

// CRDChecks checks that every CRD of this version is installed,
// Established and serves every version this one serves.
func CRDChecks(ctx context.Context, c client.Client, namespace string) ([]Check, error) {
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	out := make([]Check, 0, len(crds))
	for _, want := range crds {
		out = append(out, crdCheck(ctx, c, want, namespace))
	}
	return out, nil
}

// crdCheck checks one CRD against its rendered form want.
func crdCheck(ctx context.Context, c client.Client, want *unstructured.Unstructured, namespace string) Check {
	name := "CustomResourceDefinition " + want.GetName()
	reinstall := "run windlass install -n " + namespace
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: want.GetName()}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return Check{Message: name + " is not installed", Fix: reinstall}
		}
		return Check{Message: "cannot read " + name, Fix: err.Error()}
	}
	established := false
	for _, cond := range live.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			established = true
		}
	}
	if !established {
		return Check{Message: name + " is not Established", Fix: "see kubectl describe crd " + want.GetName()}
	}
	served := servedVersions(live)
	for _, v := range wantedVersions(want) {
		if !slices.Contains(served, v) {
			return Check{Message: fmt.Sprintf("%s does not serve %s", name, v), Fix: reinstall + " to update it"}
		}
	}
	return Check{OK: true, Message: fmt.Sprintf("%s Established, serving %s", name, strings.Join(served, ", "))}
}

// servedVersions returns the versions crd serves.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// wantedVersions returns the versions the rendered CRD serves.
func wantedVersions(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served {
			name, _ := m["name"].(string)
			out = append(out, name)
		}
	}
	return out
}

// DeploymentChecks checks that the installation of namespace has
// Deployments and that each is Available.
func DeploymentChecks(ctx context.Context, c client.Client, namespace string) []Check {
	deployments, err := InstalledDeployments(ctx, c, namespace)
	if err != nil {
		return []Check{{Message: "cannot list the Deployments of " + namespace, Fix: err.Error()}}
	}
	if len(deployments) == 0 {
		return []Check{{Message: "no Windlass Deployment in namespace " + namespace, Fix: "run windlass install -n " + namespace}}
	}
	out := make([]Check, 0, len(deployments))
	for i := range deployments {
		d := &deployments[i]
		what := fmt.Sprintf("Deployment %s/%s", d.Namespace, d.Name)
		if ok, why := DeploymentAvailable(ctx, c, d.Namespace, d.Name); !ok {
			out = append(out, Check{Message: what + " is not Available: " + why,
				Fix: fmt.Sprintf("see kubectl -n %s describe deployment %s", d.Namespace, d.Name)})
			continue
		}
		out = append(out, Check{OK: true, Message: fmt.Sprintf("%s Available (%s)", what, ImageOf(d))})
	}
	return out
}

// ImageOf returns the image of d's first container.
func ImageOf(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// InstalledDeployments returns the Deployments of the installation in
// namespace, sorted by name.
func InstalledDeployments(ctx context.Context, c client.Client, namespace string) ([]appsv1.Deployment, error) {
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{NameLabel: "windlass", NamespaceLabel: namespace}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b appsv1.Deployment) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// ImageTag returns the tag of an image reference ("v1.2.0" of
// "ghcr.io/windlass-dev/windlass:v1.2.0"), or its digest, or "latest" when
// it has neither.
func ImageTag(image string) string {
	if _, digest, ok := strings.Cut(image, "@"); ok {
		return digest
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if _, tag, ok := strings.Cut(name, ":"); ok {
		return tag
	}
	return "latest"
}
