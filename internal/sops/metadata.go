package sops

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// metadataKey is the key under which SOPS stores its metadata: a top-level
// map key in YAML and JSON, the `[sops]` section in INI and, with the
// metadataPrefix, the flattened `sops_*` entries of dotenv.
const metadataKey = "sops"

// defaultUnencryptedSuffix is the rule of a document that names none.
const defaultUnencryptedSuffix = "_unencrypted"

// metadata is what this package reads from a document's SOPS metadata.
type metadata struct {
	// lastModified is the `lastmodified` time in RFC 3339, the additional
	// data of the encrypted MAC.
	lastModified string
	// mac is the encrypted document MAC.
	mac              string
	rules            cryptRules
	macOnlyEncrypted bool
	keyGroups        []keyGroup
	shamirThreshold  int
}

// masterKey is one encrypted copy of the data key (or of a Shamir part).
type masterKey struct {
	// id is the public identity of the key: the age recipient or the PGP
	// fingerprint.
	id  string
	enc string
}

// keyGroup lists master keys that each encrypt the same data key part.
type keyGroup struct {
	age []masterKey
	pgp []masterKey
	// unsupported holds the type identifiers of cloud KMS and Vault keys.
	unsupported []string
}

// keyTypes are the metadata fields that list master keys, in the order SOPS
// reads them into a key group. Only age and pgp can be used here.
var keyTypes = []string{"kms", "gcp_kms", "hckms", "azure_kv", "hc_vault", "pgp", "age"}

// parseMetadata reads the metadata map of a document. Field values are read
// the way SOPS reads them, which accepts strings for numbers and booleans
// (dotenv and INI store every value as a string). Errors name fields, never
// values.
func parseMetadata(raw map[string]any) (*metadata, error) {
	m := &metadata{}
	lm, err := fieldString(raw, "lastmodified")
	if err != nil {
		return nil, err
	}
	t, err := time.Parse(time.RFC3339, lm)
	if err != nil {
		return nil, errors.New("the SOPS metadata has no valid lastmodified time")
	}
	m.lastModified = t.Format(time.RFC3339)
	if m.mac, err = fieldString(raw, "mac"); err != nil {
		return nil, err
	}
	if m.macOnlyEncrypted, err = fieldBool(raw, "mac_only_encrypted"); err != nil {
		return nil, err
	}
	if m.shamirThreshold, err = fieldInt(raw, "shamir_threshold"); err != nil {
		return nil, err
	}
	if m.rules, err = parseRules(raw); err != nil {
		return nil, err
	}
	if m.keyGroups, err = parseKeyGroups(raw); err != nil {
		return nil, err
	}
	return m, nil
}

// parseKeyGroups reads the master keys. Keys listed at the top level form a
// single group, which takes precedence over `key_groups`.
func parseKeyGroups(raw map[string]any) ([]keyGroup, error) {
	top, n, err := parseKeyGroup(raw)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return []keyGroup{top}, nil
	}
	list, err := fieldList(raw, "key_groups")
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, errors.New("the SOPS metadata lists no master keys")
	}
	groups := make([]keyGroup, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("SOPS metadata key_groups[%d] is not a map", i)
		}
		g, _, err := parseKeyGroup(m)
		if err != nil {
			return nil, fmt.Errorf("SOPS metadata key_groups[%d]: %w", i, err)
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// parseKeyGroup reads the master key lists of a map and returns how many
// master keys it holds.
func parseKeyGroup(raw map[string]any) (keyGroup, int, error) {
	var g keyGroup
	count := 0
	for _, typ := range keyTypes {
		list, err := fieldList(raw, typ)
		if err != nil {
			return g, 0, err
		}
		for i, item := range list {
			entry, ok := item.(map[string]any)
			if !ok {
				return g, 0, fmt.Errorf("SOPS metadata %s[%d] is not a map", typ, i)
			}
			count++
			switch typ {
			case "age":
				k, err := readMasterKey(entry, "recipient")
				if err != nil {
					return g, 0, fmt.Errorf("SOPS metadata %s[%d]: %w", typ, i, err)
				}
				g.age = append(g.age, k)
			case "pgp":
				k, err := readMasterKey(entry, "fp")
				if err != nil {
					return g, 0, fmt.Errorf("SOPS metadata %s[%d]: %w", typ, i, err)
				}
				g.pgp = append(g.pgp, k)
			default:
				g.unsupported = append(g.unsupported, typ)
			}
		}
	}
	return g, count, nil
}

func readMasterKey(entry map[string]any, idField string) (masterKey, error) {
	id, err := fieldString(entry, idField)
	if err != nil {
		return masterKey{}, err
	}
	enc, err := fieldString(entry, "enc")
	if err != nil {
		return masterKey{}, err
	}
	return masterKey{id: id, enc: enc}, nil
}

// cryptRules decide which values of a document are encrypted. A document
// sets at most one rule; one that sets none uses the unencrypted suffix
// `_unencrypted`.
type cryptRules struct {
	unencryptedSuffix string
	encryptedSuffix   string
	unencryptedRegex  *optionalRegex
	encryptedRegex    *optionalRegex
	// The comment rules look at the comments that precede a value.
	unencryptedCommentRegex *optionalRegex
	encryptedCommentRegex   *optionalRegex
}

// optionalRegex is a rule's regular expression. An expression that does not
// compile matches nothing, which is how SOPS treats it.
type optionalRegex struct {
	re *regexp.Regexp
}

func (r *optionalRegex) match(s string) bool { return r.re != nil && r.re.MatchString(s) }

func parseRules(raw map[string]any) (cryptRules, error) {
	var r cryptRules
	set := 0
	for _, f := range r.fields() {
		s, err := fieldString(raw, f.name)
		if err != nil {
			return r, err
		}
		if s != "" {
			f.set(s)
			set++
		}
	}
	switch {
	case set > 1:
		return r, errors.New("the SOPS metadata sets more than one of encrypted_suffix, unencrypted_suffix, " +
			"encrypted_regex, unencrypted_regex, encrypted_comment_regex and unencrypted_comment_regex")
	case set == 0:
		r.unencryptedSuffix = defaultUnencryptedSuffix
	}
	return r, nil
}

// ruleField is the metadata field of a rule and how to set the rule.
type ruleField struct {
	name string
	set  func(string)
}

func (r *cryptRules) fields() []ruleField {
	regex := func(dst **optionalRegex) func(string) {
		return func(s string) {
			re, _ := regexp.Compile(s)
			*dst = &optionalRegex{re: re}
		}
	}
	return []ruleField{
		{"unencrypted_suffix", func(s string) { r.unencryptedSuffix = s }},
		{"encrypted_suffix", func(s string) { r.encryptedSuffix = s }},
		{"unencrypted_regex", regex(&r.unencryptedRegex)},
		{"encrypted_regex", regex(&r.encryptedRegex)},
		{"unencrypted_comment_regex", regex(&r.unencryptedCommentRegex)},
		{"encrypted_comment_regex", regex(&r.encryptedCommentRegex)},
	}
}

// encrypts reports whether the value (or, with isComment, the comment) at
// path is encrypted. Suffix and key regex rules look at every key of the
// path; comment rules at the comments that precede it in every enclosing
// collection, the comment being decided excepted.
func (r *cryptRules) encrypts(path []string, stack commentStack, isComment bool) bool {
	switch {
	case r.unencryptedSuffix != "":
		return !anyKey(path, func(k string) bool { return strings.HasSuffix(k, r.unencryptedSuffix) })
	case r.encryptedSuffix != "":
		return anyKey(path, func(k string) bool { return strings.HasSuffix(k, r.encryptedSuffix) })
	case r.unencryptedRegex != nil:
		return !anyKey(path, r.unencryptedRegex.match)
	case r.encryptedRegex != nil:
		return anyKey(path, r.encryptedRegex.match)
	case r.unencryptedCommentRegex != nil:
		return !anyComment(stack, false, r.unencryptedCommentRegex.match)
	case r.encryptedCommentRegex != nil:
		return anyComment(stack, isComment, r.encryptedCommentRegex.match)
	}
	return true
}

func anyKey(path []string, match func(string) bool) bool {
	for _, k := range path {
		if match(k) {
			return true
		}
	}
	return false
}

// anyComment reports whether a comment of the stack matches. With skipLast
// the last comment of the innermost level, the comment being decided, is not
// considered: a marker comment stays in clear.
func anyComment(stack commentStack, skipLast bool, match func(string) bool) bool {
	for i, level := range stack {
		for j, c := range level {
			if skipLast && i == len(stack)-1 && j == len(level)-1 {
				continue
			}
			if match(c) {
				return true
			}
		}
	}
	return false
}

// The field readers below accept what SOPS' weakly typed decoding accepts
// for the field's type. A missing or null field reads as the zero value.

func fieldString(raw map[string]any, name string) (string, error) {
	switch v := raw[name].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	default:
		return "", fmt.Errorf("SOPS metadata field %s is not a string", name)
	}
}

func fieldInt(raw map[string]any, name string) (int, error) {
	switch v := raw[name].(type) {
	case nil:
		return 0, nil
	case int:
		return v, nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<31 {
			return int(v), nil
		}
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case string:
		if v == "" {
			return 0, nil
		}
		if n, err := strconv.ParseInt(v, 0, 32); err == nil {
			return int(n), nil
		}
	}
	return 0, fmt.Errorf("SOPS metadata field %s is not an integer", name)
}

func fieldBool(raw map[string]any, name string) (bool, error) {
	switch v := raw[name].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case int:
		return v != 0, nil
	case float64:
		return v != 0, nil
	case string:
		if v == "" {
			return false, nil
		}
		if b, err := strconv.ParseBool(v); err == nil {
			return b, nil
		}
	}
	return false, fmt.Errorf("SOPS metadata field %s is not a boolean", name)
}

// fieldList reads a list field. A single map stands for a list of one, an
// empty string for an empty list.
func fieldList(raw map[string]any, name string) ([]any, error) {
	switch v := raw[name].(type) {
	case nil:
		return nil, nil
	case []any:
		return v, nil
	case map[string]any:
		return []any{v}, nil
	case string:
		if v == "" {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("SOPS metadata field %s is not a list", name)
}
