package values

import (
	"errors"
	"fmt"
)

// NotFoundError is the error of a spec.valuesFrom entry whose object or
// key does not exist and that is not optional. Creating the object or the
// key fixes it, so the caller may retry.
type NotFoundError struct {
	// Kind is ConfigMap or Secret.
	Kind string
	// Namespace and Name name the object.
	Namespace, Name string
	// Key is the data key; it is only named in the message when the object
	// exists and the key does not.
	Key string
	// MissingKey tells a missing key from a missing object.
	MissingKey bool
}

// Error names the object (and key) and what to do.
func (e *NotFoundError) Error() string {
	if e.MissingKey {
		return fmt.Sprintf("valuesFrom: key '%s' not found in %s %s/%s: add it, or mark the reference optional",
			e.Key, e.Kind, e.Namespace, e.Name)
	}
	return fmt.Sprintf("valuesFrom: %s %s/%s not found: create it, or mark the reference optional",
		e.Kind, e.Namespace, e.Name)
}

// InvalidError is the error of values that cannot be used: a document
// larger than MaxDocumentSize, one that is not YAML or not a map, a
// targetPath that --set cannot use, or an unknown kind. Retrying does not
// fix it; changing the HelmRelease or the object does.
type InvalidError struct {
	// Source names the values: "ConfigMap ns/name key 'k'" or
	// "spec.values".
	Source string
	// Reason says what is wrong, without the values' content.
	Reason string
	// Err is the parser's error, kept only for sources that are not
	// Secrets: it may quote the document.
	Err error
}

// Error names the source and what is wrong with it.
func (e *InvalidError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("invalid values in %s: %s: %v", e.Source, e.Reason, e.Err)
	}
	return fmt.Sprintf("invalid values in %s: %s", e.Source, e.Reason)
}

// Unwrap returns the parser's error, if kept.
func (e *InvalidError) Unwrap() error {
	return e.Err
}

// IsNotFound reports whether err, or an error it wraps, is a
// *NotFoundError: the values may appear later.
func IsNotFound(err error) bool {
	var nf *NotFoundError
	return errors.As(err, &nf)
}

// IsInvalid reports whether err, or an error it wraps, is an
// *InvalidError: the values cannot be used until the spec or the referenced
// object changes.
func IsInvalid(err error) bool {
	var inv *InvalidError
	return errors.As(err, &inv)
}
