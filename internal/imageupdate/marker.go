package imageupdate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// markerKey is the JSON key of a setter marker. A YAML comment holding it is a
// marker, or a malformed one.
const markerKey = "$imagepolicy"

// PolicyKey names an ImagePolicy. In a marker it is written
// "<namespace>:<name>".
type PolicyKey struct {
	Namespace string
	Name      string
}

// String returns "namespace/name", as Kubernetes writes object keys.
func (k PolicyKey) String() string { return k.Namespace + "/" + k.Name }

// ImageRef is an ImagePolicy's status.latestRef: the image name, the chosen
// tag and, when the policy reflects digests, the digest of that tag.
type ImageRef struct {
	Name   string
	Tag    string
	Digest string
}

// String returns the full reference: "name:tag", or "name:tag@digest" when
// the ref has a digest.
func (r ImageRef) String() string {
	s := r.Name + ":" + r.Tag
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// field is the part of an ImageRef a marker writes.
type field int

const (
	fieldFull field = iota
	fieldName
	fieldTag
	fieldDigest
)

// marker is a parsed setter marker.
type marker struct {
	policy PolicyKey
	field  field
	// setter is the reference as written in the marker, e.g. "apps:podinfo:tag".
	setter string
}

// parseMarker reads a comment such as `# {"$imagepolicy": "apps:podinfo:tag"}`.
// White space around the JSON and inside it is free; the JSON itself must be
// exactly one object holding only the "$imagepolicy" key with a string value.
func parseMarker(comment string) (marker, error) {
	text := strings.TrimSpace(comment)
	text = strings.TrimSpace(strings.TrimPrefix(text, "#"))
	ref, err := markerReference(text)
	if err != nil {
		return marker{}, err
	}
	policy, f, err := parseReference(ref)
	if err != nil {
		return marker{}, err
	}
	return marker{policy: policy, field: f, setter: ref}, nil
}

// markerReference returns the string value of the marker's JSON object.
func markerReference(text string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("marker is not a JSON object like {%q: \"<namespace>:<policy>\"}", markerKey)
	}
	var ref *string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("marker is not valid JSON: %v", err)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return "", fmt.Errorf("marker is not valid JSON: %v", err)
		}
		if key != markerKey {
			return "", fmt.Errorf("marker has the unexpected key %q (only %q is allowed)", key, markerKey)
		}
		if ref != nil {
			return "", fmt.Errorf("marker has the key %q twice", markerKey)
		}
		var s string
		if err := json.Unmarshal(value, &s); err != nil {
			return "", fmt.Errorf("marker value of %q must be a JSON string", markerKey)
		}
		ref = &s
	}
	if err := expectObjectEnd(dec); err != nil {
		return "", err
	}
	if ref == nil {
		return "", fmt.Errorf("marker has no %q key", markerKey)
	}
	return strings.TrimSpace(*ref), nil
}

// expectObjectEnd checks that the JSON object closes and nothing follows it.
func expectObjectEnd(dec *json.Decoder) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return errors.New("marker is not valid JSON: the object does not close")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("marker has text after its JSON object")
	}
	return nil
}

// parseReference splits "<namespace>:<policy>[:tag|:name|:digest]".
func parseReference(ref string) (PolicyKey, field, error) {
	parts := strings.Split(ref, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return PolicyKey{}, 0, fmt.Errorf("reference %q is not <namespace>:<policy>[:tag|:name|:digest]", ref)
	}
	key := PolicyKey{Namespace: parts[0], Name: parts[1]}
	if msgs := validation.IsDNS1123Label(key.Namespace); len(msgs) > 0 {
		return PolicyKey{}, 0, fmt.Errorf("reference %q has an invalid namespace: %s", ref, strings.Join(msgs, "; "))
	}
	if msgs := validation.IsDNS1123Subdomain(key.Name); len(msgs) > 0 {
		return PolicyKey{}, 0, fmt.Errorf("reference %q has an invalid policy name: %s", ref, strings.Join(msgs, "; "))
	}
	if len(parts) == 2 {
		return key, fieldFull, nil
	}
	switch parts[2] {
	case "tag":
		return key, fieldTag, nil
	case "name":
		return key, fieldName, nil
	case "digest":
		return key, fieldDigest, nil
	}
	return PolicyKey{}, 0, fmt.Errorf("reference %q has the unknown suffix %q (want tag, name or digest)", ref, parts[2])
}

var (
	// tagPattern is the OCI distribution tag grammar.
	tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// digestPattern is the OCI image-spec digest grammar.
	digestPattern = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[A-Za-z0-9=_-]+$`)
	// namePattern is a repository name with an optional registry host and
	// port. It is looser than the distribution grammar, but admits only
	// characters that need no quoting in any YAML scalar style.
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:-]*$`)
)

// IsTag reports whether s is an image tag, in the OCI distribution
// grammar: letters, digits, _, . and -, not starting with . or -, at
// most 128.
func IsTag(s string) bool {
	return tagPattern.MatchString(s)
}

// maxNameLength bounds an image name (the distribution spec allows 255 for
// the repository, plus the registry host).
const maxNameLength = 512

// valueFor returns what a marker of the given field writes for ref. The parts
// are checked against the reference grammar, which also guarantees the value
// can be written as a plain, single- or double-quoted YAML scalar without
// escaping: it has no space, quote, backslash, '#' or leading indicator.
func valueFor(ref ImageRef, f field, policy PolicyKey) (string, error) {
	switch f {
	case fieldName:
		return checkedName(ref, policy)
	case fieldTag:
		return checkedTag(ref, policy)
	case fieldDigest:
		return checkedDigest(ref, policy)
	}
	name, err := checkedName(ref, policy)
	if err != nil {
		return "", err
	}
	tag, err := checkedTag(ref, policy)
	if err != nil {
		return "", err
	}
	full := name + ":" + tag
	if ref.Digest != "" {
		digest, err := checkedDigest(ref, policy)
		if err != nil {
			return "", err
		}
		full += "@" + digest
	}
	return full, nil
}

func checkedName(ref ImageRef, policy PolicyKey) (string, error) {
	if ref.Name == "" {
		return "", fmt.Errorf("policy %s has no image name in its latest ref", policy)
	}
	if len(ref.Name) > maxNameLength || !namePattern.MatchString(ref.Name) {
		return "", fmt.Errorf("policy %s has the invalid image name %q", policy, ref.Name)
	}
	return ref.Name, nil
}

func checkedTag(ref ImageRef, policy PolicyKey) (string, error) {
	if ref.Tag == "" {
		return "", fmt.Errorf("policy %s has no tag in its latest ref", policy)
	}
	if !tagPattern.MatchString(ref.Tag) {
		return "", fmt.Errorf("policy %s has the invalid tag %q", policy, ref.Tag)
	}
	return ref.Tag, nil
}

func checkedDigest(ref ImageRef, policy PolicyKey) (string, error) {
	if ref.Digest == "" {
		return "", fmt.Errorf("policy %s has no digest in its latest ref (set digestReflectionPolicy on the ImagePolicy)", policy)
	}
	if len(ref.Digest) > maxNameLength || !digestPattern.MatchString(ref.Digest) {
		return "", fmt.Errorf("policy %s has the invalid digest %q", policy, ref.Digest)
	}
	return ref.Digest, nil
}
