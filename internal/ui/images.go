package ui

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
)

// imagesPage is what the image automation page (/images) shows: the
// ImageRepositories with the ImagePolicies that read them, and the
// ImageUpdateAutomations. It shows their status, the references between
// them, the rule of a policy and the branch of an automation: nothing else
// of a spec, and no Secret.
type imagesPage struct {
	Now time.Time
	// Namespace is the filter: "" shows every namespace.
	Namespace  string
	Namespaces []string
	// Repositories hold their policies.
	Repositories []imageRepository
	// Unlisted are the policies whose repository the page does not list:
	// it does not exist, or the filter leaves its namespace out.
	Unlisted    []imagePolicy
	Automations []imageAutomation
	// Hidden are the image kinds this UI does not watch.
	Hidden []string
}

// imageRepository is an ImageRepository as the page shows it.
type imageRepository struct {
	Row row
	// Image is status.canonicalImageName: the spec's image could hold
	// what it should not.
	Image string
	// Scanned is when the last scan that changed the tags ended, and Tags
	// how many it kept; Scanned is zero before a scan.
	Scanned  time.Time
	Tags     int
	Policies []imagePolicy
}

// imagePolicy is an ImagePolicy as the page shows it.
type imagePolicy struct {
	Row row
	// Repository is the ImageRepository it reads.
	Repository client.ObjectKey
	// Rule is how it elects: "semver RANGE", "alphabetical ORDER",
	// "numerical ORDER".
	Rule             string
	Latest, Previous *imagev1.ImageRef
	// Pinned is the tag `windlass image set` pinned it to.
	Pinned string
}

// imageAutomation is an ImageUpdateAutomation as the page shows it.
type imageAutomation struct {
	Row        row
	SourceKind string
	Source     client.ObjectKey
	// Branch is the branch it pushes to, or BranchTemplate the template
	// of the branch of each update; both empty: the source's branch.
	Branch, BranchTemplate string
	PushCommit             string
	Pushed, Ran            time.Time
	// Policies are the policies of its namespace that its selector
	// selects: those it may update.
	Policies []string
}

// imageObjects are the image objects the UI watches.
type imageObjects struct {
	repositories imagev1.ImageRepositoryList
	policies     imagev1.ImagePolicyList
	automations  imagev1.ImageUpdateAutomationList
	hidden       []string
}

// images serves the image automation page.
func (s *Server) images(w http.ResponseWriter, r *http.Request) {
	objs, err := s.listImages(r.Context())
	if err != nil {
		s.Log.Error(err, "Listing the image objects")
		s.fail(w, http.StatusInternalServerError, "listing the image objects failed")
		return
	}
	page := imagesPage{Now: s.now(), Namespace: r.URL.Query().Get("namespace"), Hidden: objs.hidden,
		Namespaces: objs.namespaces()}
	page.Repositories, page.Unlisted = s.repositoriesOf(objs, page.Namespace)
	page.Automations = s.automationsOf(objs, page.Namespace)
	s.render(w, "images", page)
}

// listImages lists the image objects of the kinds the UI watches.
func (s *Server) listImages(ctx context.Context) (*imageObjects, error) {
	objs := &imageObjects{}
	for _, l := range []struct {
		kind string
		list client.ObjectList
	}{
		{imagev1.ImageRepositoryKind, &objs.repositories},
		{imagev1.ImagePolicyKind, &objs.policies},
		{imagev1.ImageUpdateAutomationKind, &objs.automations},
	} {
		if _, ok := s.kind(l.kind); !ok {
			objs.hidden = append(objs.hidden, l.kind) // listing it would start an informer
			continue
		}
		if err := s.Reader.List(ctx, l.list); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// namespaces returns the namespaces of every image object, sorted.
func (o *imageObjects) namespaces() []string {
	var out []string
	for i := range o.repositories.Items {
		out = append(out, o.repositories.Items[i].Namespace)
	}
	for i := range o.policies.Items {
		out = append(out, o.policies.Items[i].Namespace)
	}
	for i := range o.automations.Items {
		out = append(out, o.automations.Items[i].Namespace)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// repositoriesOf returns the repositories of namespace ns ("" for all),
// each with its policies of ns, and the policies of ns whose repository is
// not among them.
func (s *Server) repositoriesOf(objs *imageObjects, ns string) ([]imageRepository, []imagePolicy) {
	var repos []imageRepository
	for i := range objs.repositories.Items {
		if obj := &objs.repositories.Items[i]; inNamespace(obj, ns) {
			repos = append(repos, s.repositoryOf(obj))
		}
	}
	slices.SortFunc(repos, func(a, b imageRepository) int { return byNamespaceName(a.Row, b.Row) })
	var policies []imagePolicy
	for i := range objs.policies.Items {
		if obj := &objs.policies.Items[i]; inNamespace(obj, ns) {
			policies = append(policies, s.policyOf(obj))
		}
	}
	slices.SortFunc(policies, func(a, b imagePolicy) int { return byNamespaceName(a.Row, b.Row) })
	return repos, groupPolicies(repos, policies)
}

// groupPolicies adds each of policies to the one of repos it reads, and
// returns those whose repository is not among repos.
func groupPolicies(repos []imageRepository, policies []imagePolicy) []imagePolicy {
	at := make(map[client.ObjectKey]int, len(repos))
	for i, r := range repos {
		at[client.ObjectKey{Namespace: r.Row.Namespace, Name: r.Row.Name}] = i
	}
	var unlisted []imagePolicy
	for _, p := range policies {
		if i, ok := at[p.Repository]; ok {
			repos[i].Policies = append(repos[i].Policies, p)
		} else {
			unlisted = append(unlisted, p)
		}
	}
	return unlisted
}

// repositoryOf returns the page's view of obj.
func (s *Server) repositoryOf(obj *imagev1.ImageRepository) imageRepository {
	k, _ := s.kind(imagev1.ImageRepositoryKind)
	r := imageRepository{Row: s.row(k, obj), Image: obj.Status.CanonicalImageName}
	if scan := obj.Status.LastScanResult; scan != nil {
		r.Scanned, r.Tags = scan.ScanTime.Time, scan.TagCount
	}
	return r
}

// policyOf returns the page's view of obj.
func (s *Server) policyOf(obj *imagev1.ImagePolicy) imagePolicy {
	k, _ := s.kind(imagev1.ImagePolicyKind)
	return imagePolicy{Row: s.row(k, obj), Rule: policyRule(obj.Spec.Policy),
		Repository: client.ObjectKey{Namespace: obj.GetRepositoryNamespace(), Name: obj.Spec.ImageRepositoryRef.Name},
		Latest:     obj.Status.LatestRef, Previous: obj.Status.ObservedPreviousRef,
		Pinned: obj.Annotations[imagev1.PinAnnotation]}
}

// policyRule says how a policy elects its tag.
func policyRule(p imagev1.ImagePolicyChoice) string {
	switch {
	case p.SemVer != nil:
		return "semver " + p.SemVer.Range
	case p.Alphabetical != nil:
		return "alphabetical " + cmp.Or(p.Alphabetical.Order, imagev1.OrderAsc)
	case p.Numerical != nil:
		return "numerical " + cmp.Or(p.Numerical.Order, imagev1.OrderAsc)
	}
	return ""
}

// automationsOf returns the automations of namespace ns ("" for all), each
// with the policies it selects.
func (s *Server) automationsOf(objs *imageObjects, ns string) []imageAutomation {
	var out []imageAutomation
	for i := range objs.automations.Items {
		if obj := &objs.automations.Items[i]; inNamespace(obj, ns) {
			out = append(out, s.automationOf(obj, objs.policies.Items))
		}
	}
	slices.SortFunc(out, func(a, b imageAutomation) int { return byNamespaceName(a.Row, b.Row) })
	return out
}

// automationOf returns the page's view of obj, which may update the
// selected ones of policies.
func (s *Server) automationOf(obj *imagev1.ImageUpdateAutomation, policies []imagev1.ImagePolicy) imageAutomation {
	k, _ := s.kind(imagev1.ImageUpdateAutomationKind)
	a := imageAutomation{Row: s.row(k, obj), SourceKind: obj.Spec.SourceRef.Kind,
		Source:     client.ObjectKey{Namespace: obj.GetSourceNamespace(), Name: obj.Spec.SourceRef.Name},
		PushCommit: obj.Status.LastPushCommit, Pushed: timeOrZero(obj.Status.LastPushTime),
		Ran: timeOrZero(obj.Status.LastAutomationRunTime), Policies: selectedPolicies(obj, policies)}
	if git := obj.Spec.GitSpec; git != nil {
		if git.Push != nil {
			a.Branch, a.BranchTemplate = git.Push.Branch, git.Push.BranchTemplate
		}
		if a.Branch == "" && a.BranchTemplate == "" && git.Checkout != nil {
			a.Branch = git.Checkout.Reference.Branch
		}
	}
	return a
}

// selectedPolicies returns the names of the policies of obj's namespace that its
// spec.policySelector selects (every one when it is empty, none when it is
// invalid), sorted.
func selectedPolicies(obj *imagev1.ImageUpdateAutomation, policies []imagev1.ImagePolicy) []string {
	sel := labels.Everything()
	if obj.Spec.PolicySelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(obj.Spec.PolicySelector); err != nil {
			return nil
		}
	}
	var out []string
	for i := range policies {
		if p := &policies[i]; p.Namespace == obj.Namespace && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

// inNamespace reports whether obj is in namespace ns, or ns is "".
func inNamespace(obj client.Object, ns string) bool {
	return ns == "" || obj.GetNamespace() == ns
}

// byNamespaceName orders rows by namespace, then name.
func byNamespaceName(a, b row) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// timeOrZero returns the time of t, zero when t is nil.
func timeOrZero(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// ShortCommit returns the first twelve characters of the last commit
// pushed.
func (a imageAutomation) ShortCommit() string {
	return a.PushCommit[:min(len(a.PushCommit), 12)]
}
