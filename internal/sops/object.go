package sops

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

const (
	// DecryptAnnotation is the per-object annotation that turns decryption
	// off when set to [DecryptDisabledValue].
	DecryptAnnotation = "kustomize.toolkit.fluxcd.io/decrypt"
	// DecryptDisabledValue disables decryption of an annotated object. It is
	// matched without regard to case.
	DecryptDisabledValue = "Disabled"
)

// IsDecryptionDisabled reports whether obj opts out of decryption with the
// annotation `kustomize.toolkit.fluxcd.io/decrypt: Disabled`.
func IsDecryptionDisabled(obj *unstructured.Unstructured) bool {
	return obj != nil && strings.EqualFold(obj.GetAnnotations()[DecryptAnnotation], DecryptDisabledValue)
}

// IsEncryptedSecret reports whether obj is a core/v1 Secret that carries a
// top-level `sops` metadata key. The controller uses it to refuse applying an
// encrypted Secret when no decryption is configured.
func IsEncryptedSecret(obj *unstructured.Unstructured) bool {
	if obj == nil || obj.GetKind() != "Secret" || obj.GetAPIVersion() != "v1" {
		return false
	}
	_, found := obj.Object[metadataKey]
	return found
}

// DecryptObject decrypts, in place, a Secret whose `data` and `stringData`
// values were encrypted with `sops --encrypt`, and removes its `sops` key.
// Objects that are not SOPS-encrypted Secrets, and objects annotated
// `kustomize.toolkit.fluxcd.io/decrypt: Disabled`, are left unchanged.
//
// Each encrypted value is authenticated against its key path, so an altered
// or moved ciphertext is an error; the document MAC is not checked (see the
// package documentation). On error obj is unchanged and the error names the
// Secret and, for a bad value, its key path, never a value.
func (d *Decryptor) DecryptObject(obj *unstructured.Unstructured) error {
	if !IsEncryptedSecret(obj) || IsDecryptionDisabled(obj) {
		return nil
	}
	ref := objectRef(obj)

	in, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("decrypting Secret %s: cannot serialise the object for decryption", ref)
	}
	out, err := d.decrypt(in, FormatJSON, false)
	if err != nil {
		return fmt.Errorf("decrypting Secret %s: %w", ref, err)
	}
	decrypted := map[string]any{}
	if err := utiljson.Unmarshal(out, &decrypted); err != nil {
		return fmt.Errorf("decrypting Secret %s: the decrypted document is not a JSON object", ref)
	}
	delete(decrypted, metadataKey)
	if err := checkSecretFields(decrypted); err != nil {
		return fmt.Errorf("decrypting Secret %s: %w", ref, err)
	}
	obj.Object = decrypted
	return nil
}

// checkSecretFields makes sure the decrypted `data` values are base64 strings
// and `stringData` values strings, so that a malformed value fails here with
// a redacted message rather than later, in an API server error that may
// quote it.
func checkSecretFields(obj map[string]any) error {
	for _, field := range []string{"data", "stringData"} {
		raw, found := obj[field]
		if !found || raw == nil {
			continue
		}
		m, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("decrypted field %s is not a map", field)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s, ok := m[k].(string)
			if !ok {
				return fmt.Errorf("decrypted value %s.%s is not a string", field, k)
			}
			if field == "data" {
				if _, err := base64.StdEncoding.DecodeString(s); err != nil {
					return fmt.Errorf("decrypted value data.%s is not valid base64", k)
				}
			}
		}
	}
	return nil
}

func objectRef(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("'%s/%s'", ns, obj.GetName())
	}
	return fmt.Sprintf("'%s'", obj.GetName())
}
