package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/generator"
	"github.com/windlass-dev/windlass/internal/kinds"
)

// generatorSourceKinds are the kinds a generator's source may be.
var generatorSourceKinds = kinds.Names(kinds.SourcesFor(kinds.GeneratorSource))

// artifactGeneratorFlags are the flags of `create artifactgenerator`.
type artifactGeneratorFlags struct {
	sources, copies, revisions []string
	pathPattern                string
}

func newCreateArtifactGeneratorCommand(f *createFlags) *cobra.Command {
	a := &artifactGeneratorFlags{}
	cmd := &cobra.Command{
		Use:     "artifactgenerator NAME",
		Aliases: []string{"ag"},
		Short:   "Create or update an ArtifactGenerator",
		Long: `Create or update an ArtifactGenerator: artifacts built from the files of its
sources (--source ALIAS=Kind/NAME), each published as an ExternalArtifact that
Kustomizations and HelmReleases use as a source.

Each --copy ARTIFACT:FROM:TO[:STRATEGY] adds a copy operation to the artifact
ARTIFACT (artifacts in the order they first appear): FROM is @ALIAS/PATH, a
file, a folder or a glob (** matches folders), TO is @artifact/PATH, and the
STRATEGY is Overwrite (the default), Merge (YAML values merged) or Extract
(a .tar.gz unpacked). With --path-pattern @ALIAS/PATTERN, each {NAME} of the
pattern matches a folder, and the artifacts are made once per folder, {NAME}
filled in. Exclusions, common metadata and gates are written in YAML: use --export
and edit. Run windlass build artifactgenerator to see what each artifact
would hold.`,
		Example: `  windlass create artifactgenerator apps --source mono=GitRepository/monorepo \
    --path-pattern '@mono/apps/{app}' --copy '{app}:@mono/apps/{app}/**:@artifact/'
  windlass create artifactgenerator podinfo --source chart=OCIRepository/podinfo-chart --source cfg=GitRepository/config \
    --copy 'podinfo:@chart/:@artifact/' --copy 'podinfo:@cfg/values/prod.yaml:@artifact/podinfo/values.yaml:Merge' \
    --revision podinfo=@chart --export`,
		Args: nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			obj, err := a.object(args[0], f)
			if err != nil {
				return err
			}
			return f.apply(cmd, obj, true)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&a.sources, "source", nil, "a source, as ALIAS=Kind/[NAMESPACE/]NAME, Kind one of "+strings.Join(generatorSourceKinds, ", ")+" (repeat)")
	fs.StringArrayVar(&a.copies, "copy", nil, "a copy operation, as ARTIFACT:@ALIAS/FROM:@artifact/TO[:Overwrite|Merge|Extract] (repeat; in order)")
	fs.StringArrayVar(&a.revisions, "revision", nil, "take an artifact's revision from a source, as ARTIFACT=@ALIAS (repeat)")
	fs.StringVar(&a.pathPattern, "path-pattern", "", "make the artifacts once per folder that @ALIAS/PATTERN matches, each {NAME} one folder")
	return cmd
}

// object returns the ArtifactGenerator the flags declare, or the first
// flag that is wrong.
func (a *artifactGeneratorFlags) object(name string, f *createFlags) (*sourceextv1beta1.ArtifactGenerator, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	spec := sourceextv1beta1.ArtifactGeneratorSpec{PathPattern: a.pathPattern}
	if spec.Sources, err = a.sourceRefs(); err != nil {
		return nil, err
	}
	if spec.OutputArtifacts, err = a.artifacts(); err != nil {
		return nil, err
	}
	if err := generator.CheckSpec(spec); err != nil {
		return nil, fmt.Errorf("invalid ArtifactGenerator: %w", err)
	}
	return &sourceextv1beta1.ArtifactGenerator{ObjectMeta: om, Spec: spec}, nil
}

// sourceRefs returns the --source values.
func (a *artifactGeneratorFlags) sourceRefs() ([]sourceextv1beta1.SourceReference, error) {
	if len(a.sources) == 0 {
		return nil, errors.New("--source is required: ALIAS=Kind/[NAMESPACE/]NAME, like mono=GitRepository/monorepo")
	}
	refs := make([]sourceextv1beta1.SourceReference, 0, len(a.sources))
	for _, v := range a.sources {
		alias, ref, found := strings.Cut(v, "=")
		if !found {
			return nil, fmt.Errorf("--source %q is not ALIAS=Kind/[NAMESPACE/]NAME", v)
		}
		if err := checkAlias("--source", alias); err != nil {
			return nil, err
		}
		kr, err := parseKindRef("--source", ref, generatorSourceKinds, true)
		if err != nil {
			return nil, err
		}
		refs = append(refs, sourceextv1beta1.SourceReference{Alias: alias, Kind: kr.kind, Name: kr.name, Namespace: kr.namespace})
	}
	return refs, nil
}

// artifacts returns the artifacts of the --copy values, in the order they
// first appear, with their --revision.
func (a *artifactGeneratorFlags) artifacts() ([]sourceextv1beta1.OutputArtifact, error) {
	if len(a.copies) == 0 {
		return nil, errors.New("--copy is required: ARTIFACT:@ALIAS/FROM:@artifact/TO, like app:@mono/apps/app/**:@artifact/")
	}
	var out []sourceextv1beta1.OutputArtifact
	for _, v := range a.copies {
		name, op, err := a.parseCopy(v)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(out, func(o sourceextv1beta1.OutputArtifact) bool { return o.Name == name })
		if i < 0 {
			out, i = append(out, sourceextv1beta1.OutputArtifact{Name: name}), len(out)
		}
		out[i].Copy = append(out[i].Copy, op)
	}
	for _, v := range a.revisions {
		name, alias, found := strings.Cut(v, "=")
		i := slices.IndexFunc(out, func(o sourceextv1beta1.OutputArtifact) bool { return o.Name == name })
		switch {
		case !found || !strings.HasPrefix(alias, "@"):
			return nil, fmt.Errorf("--revision %q is not ARTIFACT=@ALIAS", v)
		case i < 0:
			return nil, fmt.Errorf("--revision %q names the artifact %q, which no --copy has", v, name)
		}
		if err := checkAlias("--revision", alias[1:]); err != nil {
			return nil, err
		}
		out[i].Revision = alias
	}
	return out, nil
}

// parseCopy parses a --copy value: ARTIFACT:FROM:TO[:STRATEGY].
func (a *artifactGeneratorFlags) parseCopy(v string) (string, sourceextv1beta1.CopyOperation, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 3 || len(parts) > 4 {
		return "", sourceextv1beta1.CopyOperation{}, fmt.Errorf("--copy %q is not ARTIFACT:@ALIAS/FROM:@artifact/TO[:STRATEGY]", v)
	}
	name, op := parts[0], sourceextv1beta1.CopyOperation{From: parts[1], To: parts[2]}
	if len(parts) == 4 {
		op.Strategy = parts[3]
	}
	if a.pathPattern == "" {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return "", op, fmt.Errorf("--copy %q: the artifact %q is not an object name: %s", v, name, errs[0])
		}
	} else if name == "" {
		return "", op, fmt.Errorf("--copy %q names no artifact", v)
	}
	if alias, _, found := strings.Cut(strings.TrimPrefix(op.From, "@"), "/"); !strings.HasPrefix(op.From, "@") || !found || alias == "" {
		return "", op, fmt.Errorf("--copy %q: FROM %q is not @ALIAS/PATH", v, op.From)
	}
	to, ok := strings.CutPrefix(op.To, "@artifact/")
	if !ok || slices.Contains(strings.Split(to, "/"), "..") {
		return "", op, fmt.Errorf("--copy %q: TO %q is not @artifact/PATH inside the artifact", v, op.To)
	}
	switch op.Strategy {
	case "", sourceextv1beta1.OverwriteStrategy, sourceextv1beta1.MergeStrategy, sourceextv1beta1.ExtractStrategy:
	default:
		return "", op, fmt.Errorf("--copy %q: the strategy %q is not one of Overwrite, Merge, Extract", v, op.Strategy)
	}
	return name, op, nil
}

// checkAlias checks an alias that flag gives: lower-case letters, digits,
// '-' and '_', starting and ending with a letter or a digit.
func checkAlias(flag, alias string) error {
	if alias == "" || len(alias) > 63 || strings.Trim(alias, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" ||
		strings.ContainsAny(alias[:1]+alias[len(alias)-1:], "-_") {
		return fmt.Errorf("%s: the alias %q is not lower-case letters, digits, '-' and '_' (starting and ending with a letter or digit)", flag, alias)
	}
	return nil
}
