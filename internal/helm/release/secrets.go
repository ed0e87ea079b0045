package release

import (
	"strings"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/ssa"
)

// withoutSecrets returns err with the values of the Secrets that rel
// renders (its manifest and its hooks') replaced, so that an API server's
// or a webhook's message that quotes them reaches no condition, event or
// log. The error returned still wraps err, for errors.Is and errors.As.
func withoutSecrets(err error, rel *releasev1.Release) error {
	if err == nil || rel == nil {
		return err
	}
	values := renderedSecretValues(rel.Manifest)
	for _, h := range rel.Hooks {
		if h != nil {
			values = append(values, renderedSecretValues(h.Manifest)...)
		}
	}
	msg := err.Error()
	if scrubbed := ssa.Scrub(msg, values); scrubbed != msg {
		return &scrubbedError{msg: scrubbed, cause: err}
	}
	return err
}

// renderedSecretValues returns the values of the Secrets of a rendered
// manifest (see ssa.SecretValues). A document that does not decode is
// left out: the action that rendered it failed on it before it could
// reach the API server.
func renderedSecretValues(manifest string) []string {
	if !strings.Contains(manifest, "Secret") {
		return nil
	}
	var values []string
	for doc := range strings.SplitSeq(manifest, "\n---") {
		if !strings.Contains(doc, "Secret") {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err == nil && obj != nil {
			values = append(values, ssa.SecretValues(&unstructured.Unstructured{Object: obj})...)
		}
	}
	return values
}

// scrubbedError is an error whose message had secret values replaced.
type scrubbedError struct {
	msg   string
	cause error
}

// Error returns the scrubbed message.
func (e *scrubbedError) Error() string { return e.msg }

// Unwrap returns the original error, for errors.Is and errors.As.
func (e *scrubbedError) Unwrap() error { return e.cause }
