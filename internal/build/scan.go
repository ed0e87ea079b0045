package build

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	sigsyaml "sigs.k8s.io/yaml"
)

// ErrRemoteReference is wrapped by the error for a kustomization that refers
// to a remote base or file.
var ErrRemoteReference = errors.New("remote references are not allowed")

// maxScannedDirs bounds the kustomizations one build may reach.
const maxScannedDirs = 10000

// maxBuiltKustomizations bounds the kustomizations one build would build,
// counting a base each time it is included: kustomize builds a base anew
// for every inclusion, so a "diamond" of bases, each level including the
// level below twice, doubles the work per level, and twenty small files
// would build a million objects.
const maxBuiltKustomizations = 10000

// dirKeys name the kustomization fields whose entries may be directories
// holding further kustomizations; pluginKeys those whose entries are
// builtin plugin configurations (or directories of them).
var (
	dirKeys    = map[string]bool{"resources": true, "bases": true, "components": true}
	pluginKeys = map[string]bool{"generators": true, "transformers": true, "validators": true}
	// fileKeys name fields, at any depth, that kustomize loads as files.
	fileKeys = map[string]bool{
		"crds": true, "configurations": true, "patchesStrategicMerge": true,
		"path": true, "files": true, "envs": true, "env": true,
		"valuesFile": true, "additionalValuesFiles": true, "targetFilePath": true,
		"chartHome": true, "configHome": true,
	}
	// opaqueKeys hold free-form data that is never a path; the scan does
	// not descend into them.
	opaqueKeys = map[string]bool{
		"metadata": true, "commonLabels": true, "commonAnnotations": true,
		"labels": true, "annotations": true, "literals": true, "patch": true,
		"valuesInline": true, "valuesLocal": true, "images": true,
		"replicas": true, "options": true, "target": true, "select": true,
		"reject": true, "source": true, "targets": true,
	}
	scpUser = regexp.MustCompile(`^[a-z][a-z0-9-]*@`)
)

// isRemote reports whether kustomize would treat ref as a URL to fetch or a
// git repository to clone. It errs on the side of saying yes.
func isRemote(ref string) bool {
	s := strings.ToLower(strings.TrimSpace(ref))
	s = strings.TrimPrefix(s, "git::")
	return strings.Contains(s, "://") ||
		strings.HasPrefix(s, "http:") || strings.HasPrefix(s, "https:") ||
		strings.HasPrefix(s, "github.com/") || strings.HasPrefix(s, "github.com:") ||
		scpUser.MatchString(s)
}

// scanner walks the kustomizations reachable from a directory and refuses
// remote references and absolute paths before kustomize sees them.
type scanner struct {
	fs       *ConfinedFS
	noRemote bool
	seen     map[string]bool
	// includes lists, for each directory, the directories its
	// kustomization includes, once per inclusion.
	includes map[string][]string
	// own holds, for each directory, the bytes its kustomization reads
	// itself: the kustomization file and the files it names.
	own map[string]int64
	// current is the directory whose kustomization is being scanned.
	current string
}

// cost is what building a directory costs: the kustomizations it builds
// and the bytes they read, an included directory counted each time.
type cost struct {
	kustomizations int64
	bytes          int64
}

// checkReferences scans every kustomization reachable from dir, refuses
// a build that would build more than maxBuiltKustomizations, and returns
// the bytes the build reads (see cost).
func checkReferences(fsys *ConfinedFS, dir string, noRemoteBases bool) (int64, error) {
	s := &scanner{fs: fsys, noRemote: noRemoteBases, seen: map[string]bool{}, includes: map[string][]string{}, own: map[string]int64{}}
	if err := s.visit(dir, false); err != nil {
		return 0, err
	}
	c := s.built(dir, map[string]cost{}, map[string]bool{})
	if c.kustomizations > maxBuiltKustomizations {
		return 0, fmt.Errorf("the build would build more than %d kustomizations (a base counts each time it is included)", maxBuiltKustomizations)
	}
	return c.bytes, nil
}

// built returns what building dir costs, its kustomizations counted up to
// maxBuiltKustomizations+1: dir's own and, for every inclusion, those of
// the directory included. A directory on the path to itself counts once
// (kustomize refuses the cycle).
func (s *scanner) built(dir string, memo map[string]cost, onPath map[string]bool) cost {
	if c, ok := memo[dir]; ok {
		return c
	}
	if onPath[dir] {
		return cost{kustomizations: 1, bytes: s.own[dir]}
	}
	onPath[dir] = true
	c := cost{kustomizations: 1, bytes: s.own[dir]}
	for _, child := range s.includes[dir] {
		included := s.built(child, memo, onPath)
		c.kustomizations += included.kustomizations
		c.bytes += included.bytes
		if c.kustomizations > maxBuiltKustomizations {
			c.kustomizations = maxBuiltKustomizations + 1
			break
		}
	}
	delete(onPath, dir)
	memo[dir] = c
	return c
}

// visit scans the kustomization in dir once. In plugin context the files it
// lists as resources are plugin configurations, and are scanned too.
func (s *scanner) visit(dir string, plugin bool) error {
	key := fmt.Sprintf("%s|%t", dir, plugin)
	if s.seen[key] {
		return nil
	}
	s.seen[key] = true
	if len(s.seen) > maxScannedDirs {
		return fmt.Errorf("more than %d kustomizations reachable from the build path", maxScannedDirs)
	}
	name, data, ok := readKustomization(s.fs, dir)
	if !ok {
		return nil // kustomize reports the missing file
	}
	defer func(previous string) { s.current = previous }(s.current)
	s.current = dir
	s.own[dir] += int64(len(data))
	doc, err := parseKustomization(data)
	if err != nil {
		return fmt.Errorf("kustomization file %q: %w", s.fs.rel(name), err)
	}
	return s.scanKustomization(name, dir, doc, plugin)
}

// parseKustomization validates a kustomization file the way kustomize does
// and returns it as the generic tree kustomize itself sees.
func parseKustomization(data []byte) (map[string]any, error) {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return nil, err
	}
	j, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("invalid Kustomization: %w", err)
	}
	return doc, nil
}

// readKustomization finds and reads the kustomization file in dir.
func readKustomization(fsys *ConfinedFS, dir string) (string, []byte, bool) {
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		p := filepath.Join(dir, n)
		if data, err := fsys.ReadFile(p); err == nil {
			return p, data, true
		}
	}
	return "", nil, false
}

// scanKustomization checks one parsed kustomization file.
func (s *scanner) scanKustomization(file, dir string, doc map[string]any, plugin bool) error {
	for _, key := range sortedKeys(doc) {
		val := doc[key]
		var err error
		switch {
		case dirKeys[key]:
			err = s.scanEntries(file, dir, val, plugin)
		case pluginKeys[key]:
			err = s.scanEntries(file, dir, val, true)
		default:
			err = s.scanTree(file, map[string]any{key: val})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scanEntries checks a list of resources, components or plugin entries,
// descending into directories and, in plugin context, plugin files.
func (s *scanner) scanEntries(file, dir string, val any, plugin bool) error {
	list, _ := val.([]any)
	for _, item := range list {
		ref, ok := item.(string)
		if !ok {
			continue
		}
		if plugin && strings.Contains(ref, "\n") {
			if err := s.scanDocuments(file, []byte(ref)); err != nil {
				return err
			}
			continue
		}
		if err := s.checkRef(file, ref); err != nil {
			return err
		}
		if err := s.follow(file, dir, ref, plugin); err != nil {
			return err
		}
	}
	return nil
}

// follow descends into a local entry: a directory is visited, a plugin
// configuration file is scanned. Entries outside root are an error here, so
// that the message names the kustomization that holds them.
func (s *scanner) follow(file, dir, ref string, plugin bool) error {
	real, err := s.fs.Resolve(filepath.Join(dir, ref))
	if err != nil {
		return fmt.Errorf("kustomization file %q: entry %q: %w", s.fs.rel(file), ref, err)
	}
	if s.fs.IsDir(real) {
		s.includes[dir] = append(s.includes[dir], real)
		return s.visit(real, plugin)
	}
	if !plugin {
		s.own[dir] += s.fs.size(real)
		return nil
	}
	data, err := s.fs.ReadFile(real)
	if err != nil {
		return nil //nolint:nilerr // kustomize reports unreadable entries
	}
	s.own[dir] += int64(len(data))
	return s.scanDocuments(real, data)
}

// scanDocuments checks every YAML document of a plugin configuration.
func (s *scanner) scanDocuments(file string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc any
		if err := dec.Decode(&doc); err != nil {
			return nil //nolint:nilerr // end of input, or YAML kustomize reports
		}
		if err := s.scanTree(file, doc); err != nil {
			return err
		}
	}
}

// scanTree checks the string values of file-loading fields at any depth.
func (s *scanner) scanTree(file string, node any) error {
	switch v := node.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for key, val := range v {
			m[fmt.Sprint(key)] = val
		}
		return s.scanTree(file, m)
	case map[string]any:
		for _, key := range sortedKeys(v) {
			val := v[key]
			if opaqueKeys[key] {
				continue
			}
			if fileKeys[key] {
				if err := s.checkFileField(file, key, val); err != nil {
					return err
				}
				continue
			}
			if err := s.scanTree(file, val); err != nil {
				return err
			}
		}
	case []any:
		for _, item := range v {
			if err := s.scanTree(file, item); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkFileField checks a string or a list of strings naming files.
func (s *scanner) checkFileField(file, key string, val any) error {
	refs := []any{val}
	if list, ok := val.([]any); ok {
		refs = list
	}
	for _, item := range refs {
		ref, ok := item.(string)
		if !ok || strings.Contains(ref, "\n") {
			continue // inline content, not a path
		}
		if key == "files" {
			if _, after, found := strings.Cut(ref, "="); found {
				ref = after
			}
		}
		if err := s.checkRef(file, ref); err != nil {
			return err
		}
		if real, err := s.fs.Resolve(filepath.Join(filepath.Dir(file), ref)); err == nil {
			s.own[s.current] += s.fs.size(real)
		}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkRef refuses remote references and absolute paths.
func (s *scanner) checkRef(file, ref string) error {
	where := s.fs.rel(file)
	if isRemote(ref) {
		if s.noRemote {
			return fmt.Errorf("kustomization file %q: remote reference %q is forbidden by the no-remote-bases setting: %w",
				where, ref, ErrRemoteReference)
		}
		return fmt.Errorf("kustomization file %q: remote reference %q: %w (only files inside the artifact can be used)",
			where, ref, ErrRemoteReference)
	}
	if filepath.IsAbs(ref) {
		return fmt.Errorf("kustomization file %q: absolute path %q: %w", where, ref, ErrOutsideRoot)
	}
	return nil
}
