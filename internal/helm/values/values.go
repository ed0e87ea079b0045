package values

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

// MaxDocumentSize bounds one values document (one valuesFrom key, or
// spec.values), in bytes.
const MaxDocumentSize = 4 << 20

// The kinds a valuesFrom entry can name.
const (
	kindConfigMap = "ConfigMap"
	kindSecret    = "Secret"
)

// targetPathPattern is the API's pattern of a valuesFrom targetPath: it
// has no ',' or '=', so the path cannot add keys of its own to the --set
// line.
var targetPathPattern = regexp.MustCompile(`^([a-zA-Z0-9_\-.\\/]|\[[0-9]{1,5}\])+$`)

// Compose returns the values of hr: the documents of spec.valuesFrom in
// list order, then spec.values, merged as the package documentation says.
// The objects are read with c in hr's namespace. The result is never nil.
func Compose(ctx context.Context, c client.Reader, hr *helmv2.HelmRelease) (map[string]any, error) {
	result := map[string]any{}
	for i, ref := range hr.Spec.ValuesFrom {
		data, src, found, err := read(ctx, c, hr.Namespace, ref)
		if err != nil {
			return nil, fmt.Errorf("spec.valuesFrom[%d]: %w", i, err)
		}
		if !found {
			continue
		}
		if ref.TargetPath != "" {
			if err := setPath(result, ref.TargetPath, data, src); err != nil {
				return nil, fmt.Errorf("spec.valuesFrom[%d]: %w", i, err)
			}
			continue
		}
		doc, err := decode(data, src)
		if err != nil {
			return nil, fmt.Errorf("spec.valuesFrom[%d]: %w", i, err)
		}
		result = merge(result, doc)
	}
	if hr.Spec.Values != nil && len(hr.Spec.Values.Raw) > 0 {
		doc, err := decode(hr.Spec.Values.Raw, source{name: "spec.values"})
		if err != nil {
			return nil, err
		}
		result = merge(result, doc)
	}
	return result, nil
}

// Digest returns "sha256:<hex>" of the JSON encoding of values, whose map
// keys encoding/json sorts. Nil values digest as an empty map. Values that
// JSON cannot encode (which Compose never returns) digest as "".
func Digest(values map[string]any) string {
	if values == nil {
		values = map[string]any{}
	}
	data, err := json.Marshal(values)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// source names where a document came from, for errors.
type source struct {
	name   string
	secret bool
}

// read returns the data at ref's key. found is false for an optional entry
// whose object or key is missing.
func read(ctx context.Context, c client.Reader, namespace string, ref helmv2.ValuesReference) ([]byte, source, bool, error) {
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	valuesKey := ref.GetValuesKey()
	src := source{
		name:   fmt.Sprintf("%s %s/%s key '%s'", ref.Kind, namespace, ref.Name, valuesKey),
		secret: ref.Kind == kindSecret,
	}
	var (
		data []byte
		ok   bool
		err  error
	)
	switch ref.Kind {
	case kindConfigMap:
		var cm corev1.ConfigMap
		if err = c.Get(ctx, key, &cm); err == nil {
			data, ok = configMapValue(&cm, valuesKey)
		}
	case kindSecret:
		var s corev1.Secret
		if err = c.Get(ctx, key, &s); err == nil {
			data, ok = s.Data[valuesKey]
		}
	default:
		return nil, src, false, &InvalidError{Source: fmt.Sprintf("%s %s/%s", ref.Kind, namespace, ref.Name),
			Reason: "the kind must be ConfigMap or Secret"}
	}
	switch {
	case apierrors.IsNotFound(err) && ref.Optional:
		return nil, src, false, nil
	case apierrors.IsNotFound(err):
		return nil, src, false, &NotFoundError{Kind: ref.Kind, Namespace: namespace, Name: ref.Name, Key: valuesKey}
	case err != nil:
		return nil, src, false, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	case !ok && ref.Optional:
		return nil, src, false, nil
	case !ok:
		return nil, src, false, &NotFoundError{Kind: ref.Kind, Namespace: namespace, Name: ref.Name, Key: valuesKey, MissingKey: true}
	}
	return data, src, true, nil
}

// configMapValue returns the value of key in the ConfigMap's data, else in
// its binaryData.
func configMapValue(cm *corev1.ConfigMap, key string) ([]byte, bool) {
	if v, ok := cm.Data[key]; ok {
		return []byte(v), true
	}
	v, ok := cm.BinaryData[key]
	return v, ok
}

// lineNumber finds the line a YAML parser's error points at.
var lineNumber = regexp.MustCompile(`line \d+`)

// decode parses a values document, which must be a map, empty or null.
func decode(data []byte, src source) (map[string]any, error) {
	if len(data) > MaxDocumentSize {
		return nil, &InvalidError{Source: src.name,
			Reason: fmt.Sprintf("the document is %d bytes, more than the limit of %d", len(data), MaxDocumentSize)}
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, parseError(src, err)
	}
	switch v := doc.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	default:
		return nil, &InvalidError{Source: src.name, Reason: fmt.Sprintf("the document is a %s, not a map", typeName(v))}
	}
}

// parseError describes a YAML error; for a Secret it keeps only the line
// number, since the parser may quote the document.
func parseError(src source, err error) error {
	if !src.secret {
		return &InvalidError{Source: src.name, Reason: "not valid YAML", Err: err}
	}
	reason := "not valid YAML"
	if line := lineNumber.FindString(err.Error()); line != "" {
		reason += " at " + line
	}
	return &InvalidError{Source: src.name, Reason: reason}
}

// typeName names the JSON type of a decoded value.
func typeName(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, int64, int:
		return "number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// setPath sets value at path in dest with Helm's --set syntax. The value
// is escaped so that the parser reads it whole: a backslash makes it take
// the next character as it is, which turns off ',' (the next value), '{'
// (a list) and '\' itself.
func setPath(dest map[string]any, path string, value []byte, src source) error {
	if len(value) > MaxDocumentSize {
		return &InvalidError{Source: src.name,
			Reason: fmt.Sprintf("the value is %d bytes, more than the limit of %d", len(value), MaxDocumentSize)}
	}
	if !targetPathPattern.MatchString(path) {
		return &InvalidError{Source: src.name,
			Reason: fmt.Sprintf("targetPath '%s' may only hold letters, digits, '_-./\\' and [index]", path)}
	}
	v := string(value)
	parse := strvals.ParseInto
	if unquoted, ok := unquote(v); ok {
		v, parse = unquoted, strvals.ParseIntoString
	}
	if err := parse(path+"="+escape(v), dest); err != nil {
		// The parser's errors name the path, never the escaped value.
		return &InvalidError{Source: src.name, Reason: fmt.Sprintf("cannot set targetPath '%s'", path), Err: err}
	}
	return nil
}

// unquote strips one pair of matching single or double quotes around v.
func unquote(v string) (string, bool) {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1], true
	}
	return v, false
}

// escapes are the characters that the --set parser would read as syntax
// in a value.
var escapes = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `{`, `\{`, `}`, `\}`)

// escape makes the --set parser read v as one literal value.
func escape(v string) string {
	return escapes.Replace(v)
}

// merge merges src over dst and returns dst: maps merge key by key,
// recursively; any other value in src replaces dst's.
func merge(dst, src map[string]any) map[string]any {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
	return dst
}
