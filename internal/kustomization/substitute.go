package kustomization

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/internal/substitute"
)

// substituteAlways is the postBuild.substituteStrategy that substitutes
// even without variables, so that the defaults of the references apply.
const substituteAlways = "Always"

// SubstituteFromError is the error for a substituteFrom object that could
// not be read: it does not exist and is not optional (NotFound), or the
// read failed. It names the object, never a value.
type SubstituteFromError struct {
	// Kind is the object's kind: ConfigMap or Secret.
	Kind string
	// Key is the object's namespace and name.
	Key client.ObjectKey
	// Err is the error of the read.
	Err error
}

// Error names the object and what to do.
func (e *SubstituteFromError) Error() string {
	if e.NotFound() {
		return fmt.Sprintf("substituteFrom %s %s not found: create it, or mark it optional", e.Kind, e.Key)
	}
	return fmt.Sprintf("reading substituteFrom %s %s: %v", e.Kind, e.Key, e.Err)
}

// Unwrap returns the error of the read.
func (e *SubstituteFromError) Unwrap() error {
	return e.Err
}

// NotFound reports whether the object does not exist.
func (e *SubstituteFromError) NotFound() bool {
	return apierrors.IsNotFound(e.Err)
}

// SubstituteVars returns the variables of obj's spec.postBuild, merged as
// the controller merges them: those of each substituteFrom object in turn,
// then substitute, a later source overriding an earlier one. The objects
// are read with c in obj's namespace; an optional one that does not exist
// has no variables, any other that cannot be read is a
// *SubstituteFromError. With c nil (no cluster) substituteFrom is skipped.
// It returns nil when obj has no postBuild.
func SubstituteVars(ctx context.Context, c client.Reader, obj *kustomizev1.Kustomization) (map[string]string, error) {
	pb := obj.Spec.PostBuild
	if pb == nil {
		return nil, nil
	}
	var sources []map[string]string
	for _, ref := range pb.SubstituteFrom {
		if c == nil {
			continue
		}
		vars, err := readSubstituteFrom(ctx, c, obj.Namespace, ref)
		if err != nil {
			return nil, err
		}
		sources = append(sources, vars)
	}
	return substitute.Vars(append(sources, pb.Substitute)...), nil
}

// readSubstituteFrom reads the variables of one substituteFrom entry; an
// optional one that does not exist has none.
func readSubstituteFrom(ctx context.Context, c client.Reader, namespace string, ref kustomizev1.SubstituteReference) (map[string]string, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	vars := map[string]string{}
	var err error
	switch ref.Kind {
	case "ConfigMap":
		var cm corev1.ConfigMap
		if err = c.Get(ctx, key, &cm); err == nil {
			for k, v := range cm.Data {
				vars[k] = v
			}
		}
	case "Secret":
		var s corev1.Secret
		if err = c.Get(ctx, key, &s); err == nil {
			for k, v := range s.Data {
				vars[k] = string(v)
			}
		}
	default:
		return nil, fmt.Errorf("substituteFrom kind %q is neither ConfigMap nor Secret: fix the Kustomization", ref.Kind)
	}
	switch {
	case apierrors.IsNotFound(err) && ref.Optional:
		return nil, nil
	case err != nil:
		return nil, &SubstituteFromError{Kind: ref.Kind, Key: key, Err: err}
	}
	return vars, nil
}

// Substitution returns the post-build substitution of spec.postBuild with
// vars, to run on each built document (build.Documents.Objects), when the
// controller substitutes: with a postBuild, and variables or the
// substituteStrategy Always. Otherwise it returns nil. strict makes a
// reference to an unset variable without a default an error (the
// controller is always strict). The errors, of variables whose names are
// not valid and of the documents, start with "post-build substitution
// failed: "; those of an output past a size limit,
// substitute.MaxBuildGrowth for the documents in all included, match
// substitute.ErrOutputTooLarge.
func Substitution(spec *kustomizev1.KustomizationSpec, vars map[string]string, strict bool) (func(*yaml.Node) error, error) {
	pb := spec.PostBuild
	if pb == nil || (len(vars) == 0 && pb.SubstituteStrategy != substituteAlways) {
		return nil, nil
	}
	b, err := substitute.NewBuild(vars, strict)
	if err != nil {
		return nil, substitutionFailed(err)
	}
	return func(doc *yaml.Node) error {
		if err := b.Node(doc); err != nil {
			return substitutionFailed(err)
		}
		return nil
	}, nil
}

func substitutionFailed(err error) error {
	return fmt.Errorf("post-build substitution failed: %w", err)
}
