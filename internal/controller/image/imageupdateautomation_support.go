package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/git"
	"github.com/windlass-dev/windlass/internal/imageupdate"
	"github.com/windlass-dev/windlass/internal/reconcile/outcome"
	"github.com/windlass-dev/windlass/internal/secret"
)

// upToDate reports whether a run can end without a checkout: the spec and
// the elected images are those of the last run, and the branch that run
// built on is still where it was (one ls-remote).
func (r *ImageUpdateAutomationReconciler) upToDate(ctx context.Context, obj *imagev1.ImageUpdateAutomation,
	scope *automationScope, groups []pushGroup) bool {
	if obj.Status.ObservedGeneration != obj.Generation || len(groups) != 1 || obj.Status.ObservedSourceRevision == "" ||
		!maps.Equal(obj.Status.ObservedPolicies, scope.observed) {
		return false
	}
	branch, hash, ok := strings.Cut(obj.Status.ObservedSourceRevision, "@sha1:")
	if !ok {
		return false
	}
	refs, err := git.LsRemote(ctx, scope.url, scope.auth, scope.proxy)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Listing the remote failed, checking out instead", "error", err.Error())
		return false
	}
	// The last run built on the push branch, or, while it did not exist,
	// on the branch checked out.
	if tip, ok := refs["refs/heads/"+branch]; ok {
		return tip == hash
	}
	return refs["refs/heads/"+checkoutBranch(scope)] == hash
}

// branchData is what a branch template sees.
type branchData struct {
	// AutomationObject is the automation's namespace/name.
	AutomationObject types.NamespacedName
	// Policy is the policy's name, or namespace-name when it is in another
	// namespace than the automation.
	Policy string
	// Tag is the tag the policy elects.
	Tag string
}

// renderBranch renders spec.git.push.branchTemplate for one policy.
func renderBranch(obj *imagev1.ImageUpdateAutomation, key imageupdate.PolicyKey, ref imageupdate.ImageRef) (string, error) {
	tmpl, err := template.New("branch").Option("missingkey=error").Parse(obj.Spec.GitSpec.Push.BranchTemplate)
	if err != nil {
		return "", outcome.Stall(imagev1.ReasonInvalidTemplate, fmt.Errorf("spec.git.push.branchTemplate: %w", err))
	}
	policy := key.Name
	if key.Namespace != obj.Namespace {
		policy = key.Namespace + "-" + key.Name
	}
	var b bytes.Buffer
	data := branchData{AutomationObject: types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}, Policy: policy, Tag: ref.Tag}
	if err := tmpl.Execute(&b, data); err != nil {
		return "", outcome.Stall(imagev1.ReasonInvalidTemplate, fmt.Errorf("spec.git.push.branchTemplate: %w", err))
	}
	branch := strings.TrimSpace(b.String())
	if !validBranchName(branch) {
		return "", outcome.Stall(imagev1.ReasonInvalidTemplate,
			fmt.Errorf("spec.git.push.branchTemplate gives '%s', which is not a valid branch name", branch))
	}
	return branch, nil
}

// validBranchName reports whether name is a branch name git accepts (the
// rules of git check-ref-format that a template can break).
func validBranchName(name string) bool {
	if name == "" || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") ||
		strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") ||
		strings.Contains(name, "//") || strings.Contains(name, "@{") || name == "@" {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f || strings.ContainsRune(" ~^:?*[\\", c) {
			return false
		}
	}
	return true
}

// checkTemplates stalls an automation whose commit message template or
// branch template does not parse, or uses the removed field .Updated.
func checkTemplates(obj *imagev1.ImageUpdateAutomation) error {
	g := obj.Spec.GitSpec
	if g == nil {
		return outcome.Stall(imagev1.ReasonInvalidSourceConfiguration, errors.New("spec.git is required: it names the commit author"))
	}
	if _, err := imageupdate.ParseMessageTemplate(g.Commit.MessageTemplate); err != nil {
		if errors.Is(err, imageupdate.ErrRemovedTemplateField) {
			return outcome.Stall(imagev1.ReasonRemovedTemplateField, fmt.Errorf("spec.git.commit.messageTemplate: %w", err))
		}
		return outcome.Stall(imagev1.ReasonInvalidTemplate, fmt.Errorf("spec.git.commit.messageTemplate: %w", err))
	}
	if hasBranchTemplate(obj) {
		if _, err := template.New("branch").Parse(g.Push.BranchTemplate); err != nil {
			return outcome.Stall(imagev1.ReasonInvalidTemplate, fmt.Errorf("spec.git.push.branchTemplate: %w", err))
		}
	}
	return nil
}

// commitMessage renders the commit message of an update.
func commitMessage(obj *imagev1.ImageUpdateAutomation, result *imageupdate.Result) (string, error) {
	commit := obj.Spec.GitSpec.Commit
	msg, err := imageupdate.RenderMessage(commit.MessageTemplate, imageupdate.TemplateData{
		AutomationObject: types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name},
		Changed:          result,
		Values:           commit.MessageTemplateValues,
	})
	if err != nil {
		return "", outcome.Stall(imagev1.ReasonInvalidTemplate, fmt.Errorf("spec.git.commit.messageTemplate: %w", err))
	}
	return msg, nil
}

// updateNote writes the note of a commit.
func updateNote(obj *imagev1.ImageUpdateAutomation, scope *automationScope, result *imageupdate.Result) (string, error) {
	note := imageupdate.UpdateNote{Automation: obj.Namespace + "/" + obj.Name}
	used := map[imageupdate.PolicyKey]bool{}
	for _, file := range slices.Sorted(maps.Keys(result.FileChanges)) {
		for id, changes := range result.FileChanges[file] {
			for _, c := range changes {
				note.Changes = append(note.Changes, imageupdate.NoteChange{File: file, Object: objectName(id), Setter: c.Setter,
					OldValue: c.OldValue, NewValue: c.NewValue})
				if key, ok := setterPolicy(c.Setter); ok {
					used[key] = true
				}
			}
		}
	}
	slices.SortFunc(note.Changes, func(a, b imageupdate.NoteChange) int {
		return strings.Compare(a.File+a.Object+a.Setter, b.File+b.Object+b.Setter)
	})
	for _, key := range slices.SortedFunc(maps.Keys(used), func(a, b imageupdate.PolicyKey) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	}) {
		if p, ok := scope.policies[key]; ok {
			note.Policies = append(note.Policies, notePolicy(p))
		}
	}
	return note.Note()
}

// notePolicy says what a policy elects and why.
func notePolicy(p *imagev1.ImagePolicy) imageupdate.NotePolicy {
	np := imageupdate.NotePolicy{Name: p.Namespace + "/" + p.Name, Image: p.Status.LatestRef.String()}
	if prev := p.Status.ObservedPreviousRef; prev != nil {
		np.Previous = prev.String()
	}
	if pinned, ok := p.Annotations[imagev1.PinAnnotation]; ok {
		np.Reason = fmt.Sprintf("pinned to tag %s (windlass image set)", pinned)
	} else if compiled, err := compilePolicy(p); err == nil {
		np.Reason = "latest by policy: " + compiled.String()
	}
	return np
}

// setterPolicy returns the policy a setter names ("<ns>:<name>[:field]").
func setterPolicy(setter string) (imageupdate.PolicyKey, bool) {
	parts := strings.Split(setter, ":")
	if len(parts) < 2 {
		return imageupdate.PolicyKey{}, false
	}
	return imageupdate.PolicyKey{Namespace: parts[0], Name: parts[1]}, true
}

// objectName names the object of a change as kubectl does.
func objectName(id imageupdate.ObjectIdentifier) string {
	if id.Kind == "" && id.Name == "" {
		return ""
	}
	name := id.Name
	if id.Namespace != "" {
		name = id.Namespace + "/" + name
	}
	return id.Kind + "/" + name
}

// readSigningKey reads spec.git.commit.signingKey into a signer.
func (r *ImageUpdateAutomationReconciler) readSigningKey(ctx context.Context, obj *imagev1.ImageUpdateAutomation, scope *automationScope) (outcome.Result, error) {
	key := obj.Spec.GitSpec.Commit.SigningKey
	if key == nil {
		return outcome.ResultEmpty, nil
	}
	data, err := secret.Data(ctx, r.Client, obj.Namespace, key.SecretRef.Name)
	if err != nil {
		return outcome.ResultEmpty, outcome.Fail(imagev1.ReasonInvalidSigningKey, err)
	}
	kind := key.Type
	if kind == "" {
		kind = imagev1.SigningKeyGPG
		if _, ok := data[signingKeyGPG]; !ok && len(data[signingKeySSH]) > 0 {
			kind = imagev1.SigningKeySSH
		}
	}
	var signer git.Signer
	switch kind {
	case imagev1.SigningKeySSH:
		if len(data[signingKeySSH]) == 0 {
			return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidSigningKey,
				fmt.Errorf("secret '%s' has no '%s' key with an SSH private key", key.SecretRef.Name, signingKeySSH))
		}
		signer, err = git.NewSSHSigner(data[signingKeySSH], data["password"])
	default:
		if len(data[signingKeyGPG]) == 0 {
			return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidSigningKey,
				fmt.Errorf("secret '%s' has no '%s' key with an armored OpenPGP private key", key.SecretRef.Name, signingKeyGPG))
		}
		signer, err = git.NewOpenPGPSigner(data[signingKeyGPG], data["passphrase"])
	}
	if err != nil {
		return outcome.ResultEmpty, outcome.Stall(imagev1.ReasonInvalidSigningKey,
			fmt.Errorf("signing key of secret '%s': %w", key.SecretRef.Name, err))
	}
	scope.signer = signer
	return outcome.ResultEmpty, nil
}

// Keys of a signing key Secret.
const (
	signingKeyGPG = "git.asc"
	signingKeySSH = "identity"
)

// latestRefChanged passes the ImagePolicy events that can change what an
// automation writes: a policy created or deleted, or a new latest image.
func latestRefChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			o, n := e.ObjectOld.(*imagev1.ImagePolicy), e.ObjectNew.(*imagev1.ImagePolicy)
			if (o.Status.LatestRef == nil) != (n.Status.LatestRef == nil) {
				return true
			}
			return n.Status.LatestRef != nil && *o.Status.LatestRef != *n.Status.LatestRef ||
				!maps.Equal(o.Labels, n.Labels)
		},
	}
}

// sourceChanged passes the updates of a GitRepository's spec, and of the
// namespaces it lends its credentials to (imagev1.PushFromNamespacesAnnotation).
func sourceChanged() predicate.Predicate {
	lent := func(o client.Object) string { return o.GetAnnotations()[imagev1.PushFromNamespacesAnnotation] }
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool { return lent(e.ObjectOld) != lent(e.ObjectNew) },
	})
}
