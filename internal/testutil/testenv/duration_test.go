package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// The validation that every metav1.Duration field of the CRDs carries: the
// pattern (spec fields only) and the rule that refuses whatever Go's
// time.ParseDuration refuses. See the note above GitRepositorySpec.Interval
// in api/source/v1/gitrepository_types.go.
const (
	durationPattern = `^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	durationRule    = `duration(self) <= duration('2562047h47m16.854775807s')`
	durationMessage = `must be a duration that Go can parse: at most 2562047h47m16.854775807s`
)

// durationField is a metav1.Duration field of one served version of a kind.
type durationField struct {
	apiVersion, kind string
	// path is the field's JSON path; [] stands for the items of a list.
	path string
}

// durationFields lists every metav1.Duration field of every served version
// of the Windlass kinds; TestDurationFieldsAllValidated fails when the Go
// types or the CRDs have one more.
var durationFields = []durationField{
	{"source.toolkit.fluxcd.io/v1", "GitRepository", "spec.interval"},
	{"source.toolkit.fluxcd.io/v1", "GitRepository", "spec.timeout"},
	{"source.toolkit.fluxcd.io/v1beta1", "GitRepository", "spec.interval"},
	{"source.toolkit.fluxcd.io/v1beta1", "GitRepository", "spec.timeout"},
	{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "spec.interval"},
	{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "spec.retryInterval"},
	{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "spec.timeout"},
	{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", "status.history[].lastReconciledDuration"},
	{"kustomize.toolkit.fluxcd.io/v1beta1", "Kustomization", "spec.interval"},
	{"kustomize.toolkit.fluxcd.io/v1beta1", "Kustomization", "spec.retryInterval"},
	{"kustomize.toolkit.fluxcd.io/v1beta1", "Kustomization", "spec.timeout"},
	{"kustomize.toolkit.fluxcd.io/v1beta1", "Kustomization", "status.history[].lastReconciledDuration"},
	{"image.toolkit.fluxcd.io/v1", "ImageRepository", "spec.interval"},
	{"image.toolkit.fluxcd.io/v1", "ImageRepository", "spec.timeout"},
	{"image.toolkit.fluxcd.io/v1beta2", "ImageRepository", "spec.interval"},
	{"image.toolkit.fluxcd.io/v1beta2", "ImageRepository", "spec.timeout"},
	{"image.toolkit.fluxcd.io/v1", "ImagePolicy", "spec.interval"},
	{"image.toolkit.fluxcd.io/v1beta2", "ImagePolicy", "spec.interval"},
	{"image.toolkit.fluxcd.io/v1", "ImageUpdateAutomation", "spec.interval"},
	{"image.toolkit.fluxcd.io/v1beta2", "ImageUpdateAutomation", "spec.interval"},
}

var durationCRDs = []string{
	"gitrepositories.source.toolkit.fluxcd.io",
	"kustomizations.kustomize.toolkit.fluxcd.io",
	"imagerepositories.image.toolkit.fluxcd.io",
	"imagepolicies.image.toolkit.fluxcd.io",
	"imageupdateautomations.image.toolkit.fluxcd.io",
}

// overflowingDurations match the pattern but overflow a time.Duration.
var overflowingDurations = []string{
	"9999999999h",
	"2562048h",
	"2562047h2562047h",
	"2562047h47m16.854775808s", // one nanosecond too many
	"153722868m",
	"9223372037s",
	"9223372036855ms",
	"1h2562047h",
}

// validSpecDurations match the pattern and fit a time.Duration.
var validSpecDurations = []string{
	"1h30m", "500ms", "0.5s", "0s", "2562047h", "2562047h47m16.854775807s", "1h1h1h",
}

// validStatusDurations are what time.Duration.String writes for the status.
var validStatusDurations = []string{
	"1h30m0s", "0s", "1.5µs", "500ns", "2562047h47m16.854775807s",
}

func (f durationField) String() string {
	return f.kind + "." + f.apiVersion + "/" + f.path
}

func (f durationField) isStatus() bool { return strings.HasPrefix(f.path, "status.") }

// errorPath is how the API server names the field in an error: the first
// item of a list.
func (f durationField) errorPath() string { return strings.ReplaceAll(f.path, "[]", "[0]") }

// TestDurationFieldsAllValidated finds the metav1.Duration fields of every
// served version in the Go types, checks that durationFields lists them all,
// and that the installed CRDs give every one the same validation.
func TestDurationFieldsAllValidated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var found []durationField
	for _, name := range durationCRDs {
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, &crd)).To(Succeed())
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			obj, err := env.Scheme.New(gvk)
			g.Expect(err).NotTo(HaveOccurred(), gvk.String())
			var paths []string
			durationPaths(reflect.TypeOf(obj), "", map[reflect.Type]bool{}, &paths)
			for _, p := range paths {
				f := durationField{gvk.GroupVersion().String(), gvk.Kind, p}
				found = append(found, f)

				s := schemaAt(v.Schema.OpenAPIV3Schema, p)
				g.Expect(s).NotTo(BeNil(), "no schema for "+f.String())
				g.Expect(s.Type).To(Equal("string"), f.String())
				g.Expect(s.XValidations).To(Equal(apiextensionsv1.ValidationRules{{
					Rule: durationRule, Message: durationMessage,
				}}), f.String())
				if !f.isStatus() {
					g.Expect(s.Pattern).To(Equal(durationPattern), f.String())
				}
			}
		}
	}
	g.Expect(found).To(ConsistOf(durationFields))
}

var metav1Duration = reflect.TypeFor[metav1.Duration]()

// durationPaths appends to out the JSON paths of the metav1.Duration fields
// in t, below prefix.
func durationPaths(t reflect.Type, prefix string, onPath map[reflect.Type]bool, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		durationPaths(t.Elem(), prefix+"[]", onPath, out)
		return
	case reflect.Map:
		durationPaths(t.Elem(), prefix+"[*]", onPath, out)
		return
	case reflect.Struct:
	default:
		return
	}
	if t == metav1Duration {
		*out = append(*out, prefix)
		return
	}
	if onPath[t] {
		return
	}
	onPath[t] = true
	defer delete(onPath, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case name == "" && f.Anonymous:
			durationPaths(f.Type, prefix, onPath, out)
		case name == "":
			durationPaths(f.Type, joinPath(prefix, f.Name), onPath, out)
		default:
			durationPaths(f.Type, joinPath(prefix, name), onPath, out)
		}
	}
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// schemaAt returns the schema of the field at path, or nil.
func schemaAt(s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	for _, part := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			return nil
		}
		s = &p
		if list {
			if s.Items == nil || s.Items.Schema == nil {
				return nil
			}
			s = s.Items.Schema
		}
	}
	return s
}

// baseObject returns a valid object of f's kind and version.
func baseObject(f durationField, ns, name string) *unstructured.Unstructured {
	spec := map[string]any{"interval": "1m", "url": "https://h/r"}
	switch f.kind {
	case "Kustomization":
		spec = map[string]any{"interval": "1m", "prune": true, "sourceRef": map[string]any{"kind": "GitRepository", "name": "x"}}
	case "ImageRepository":
		spec = map[string]any{"interval": "1m", "image": "ghcr.io/org/app"}
	case "ImagePolicy":
		spec = map[string]any{"interval": "1m", "digestReflectionPolicy": "Always", "imageRepositoryRef": map[string]any{"name": "x"},
			"policy": map[string]any{"semver": map[string]any{"range": "1.x"}}}
	case "ImageUpdateAutomation":
		spec = map[string]any{"interval": "1m", "sourceRef": map[string]any{"kind": "GitRepository", "name": "x"}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": f.apiVersion, "kind": f.kind, "spec": spec,
	}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// statusPatch is a merge patch that sets status.history to one snapshot
// whose lastReconciledDuration is d.
func statusPatch(d string) client.Patch {
	now := time.Now().UTC().Format(time.RFC3339)
	data, err := json.Marshal(map[string]any{"status": map[string]any{"history": []any{map[string]any{
		"digest": "sha256:0", "firstReconciled": now, "lastReconciled": now,
		"lastReconciledDuration": d, "lastReconciledStatus": "ReconciliationSucceeded",
		"totalReconciliations": 1,
	}}}})
	if err != nil {
		panic(err)
	}
	return client.RawPatch(types.MergePatchType, data)
}

// setDuration writes d to the field f of a new object in ns (a dry run when
// dryRun) and returns the API server's answer. A status field is written
// through the status subresource of an object created for it.
func setDuration(t *testing.T, f durationField, ns, name, d string, dryRun bool) error {
	t.Helper()
	ctx := context.Background()
	var opts []client.CreateOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	u := baseObject(f, ns, name)
	if !f.isStatus() {
		if err := unstructured.SetNestedField(u.Object, d, strings.Split(f.path, ".")...); err != nil {
			t.Fatal(err)
		}
		return env.Client.Create(ctx, u, opts...)
	}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	var popts []client.SubResourcePatchOption
	if dryRun {
		popts = append(popts, client.DryRunAll)
	}
	return env.Client.Status().Patch(ctx, u, statusPatch(d), popts...)
}

// TestDurationOverflowRejected: a duration that matches the pattern but
// overflows a time.Duration, which would stop the decoding of every object
// of the kind, is refused in every duration field of every served version,
// with an error that names the field. So are the values that the pattern
// refuses: a sign, a bare 0, units other than ms, s, m and h.
func TestDurationOverflowRejected(t *testing.T) {
	ns := env.CreateNamespace(t)
	n := 0
	for _, f := range durationFields {
		values := overflowingDurations
		if !f.isStatus() {
			values = append(slices.Clone(values), "-1s", "0", "1y", "1ns", "1.5µs", "1h-1m", "")
		} else {
			values = append(slices.Clone(values), "1y", "", "x")
		}
		for _, d := range values {
			t.Run(f.String()+"="+d, func(t *testing.T) {
				g := NewWithT(t)
				n++
				err := setDuration(t, f, ns, fmt.Sprintf("bad-%d", n), d, true)
				g.Expect(err).To(MatchError(ContainSubstring(f.errorPath()+": ")), "accepted")
				if slices.Contains(overflowingDurations, d) {
					_, perr := time.ParseDuration(d)
					g.Expect(perr).To(HaveOccurred(), "a value that Go parses")
					g.Expect(err).To(MatchError(ContainSubstring(durationMessage)))
				}
			})
		}
	}
}

// TestDurationValidAccepted: every valid duration that the pattern allows,
// up to the largest time.Duration, is stored in every duration field, and
// the controller's types decode every object of the kinds, one by one and
// as a list, to the same value as time.ParseDuration.
func TestDurationValidAccepted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	type stored struct {
		f    durationField
		name string
		want time.Duration
	}
	var all []stored
	n := 0
	for _, f := range durationFields {
		values := validSpecDurations
		if f.isStatus() {
			values = validStatusDurations
		}
		for _, d := range values {
			n++
			name := fmt.Sprintf("good-%d", n)
			want, err := time.ParseDuration(d)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(setDuration(t, f, ns, name, d, false)).To(Succeed(), f.String()+"="+d)
			all = append(all, stored{f, name, want})
		}
	}

	// Read back in the storage version, as the controllers do.
	for _, s := range all {
		gvk := schema.FromAPIVersionAndKind(s.f.apiVersion, s.f.kind)
		gvk.Version = "v1"
		obj, err := env.Scheme.New(gvk)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.name}, obj.(client.Object))).To(Succeed(), s.name)
		g.Expect(durationAt(obj, s.f.path)).To(Equal(s.want), s.f.String())
	}
	// Every served version decodes the whole list.
	for _, name := range durationCRDs {
		var crd apiextensionsv1.CustomResourceDefinition
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, &crd)).To(Succeed())
		for _, v := range crd.Spec.Versions {
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.ListKind}
			list, err := env.Scheme.New(gvk)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(env.Client.List(ctx, list.(client.ObjectList), client.InNamespace(ns))).To(Succeed(), gvk.String())
			g.Expect(apimeta.LenList(list)).To(BeNumerically(">", 0), gvk.String())
		}
	}
}

// durationAt returns the metav1.Duration at the JSON path of obj, taking the
// first item of lists.
func durationAt(obj any, path string) time.Duration {
	v := reflect.ValueOf(obj)
	for _, part := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		v = fieldByJSONName(v, name)
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if list {
			v = v.Index(0)
		}
	}
	return v.Interface().(metav1.Duration).Duration
}

func fieldByJSONName(v reflect.Value, name string) reflect.Value {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == name {
			return v.Field(i)
		}
	}
	panic("no field " + name + " in " + v.Type().String())
}

// TestDurationValidationMatchesGo: on strings that match the pattern, many
// of them near the largest time.Duration, the API server accepts exactly
// those that time.ParseDuration parses. The rule is the same in every
// duration field (TestDurationFieldsAllValidated), so one field stands for
// all.
func TestDurationValidationMatchesGo(t *testing.T) {
	g := NewWithT(t)
	ns := env.CreateNamespace(t)
	f := durationFields[0]
	pattern := regexp.MustCompile(durationPattern)

	// The largest whole number of each unit, and one more.
	limits := map[string]uint64{"h": 2562047, "m": 153722867, "s": 9223372036, "ms": 9223372036854}
	units := []string{"h", "m", "s", "ms"}
	rng := rand.New(rand.NewPCG(24, 39272))
	var inputs []string
	for range 300 {
		var b strings.Builder
		for range 1 + rng.IntN(3) {
			u := units[rng.IntN(len(units))]
			var whole uint64
			switch rng.IntN(4) {
			case 0: // at or next to the limit
				whole = limits[u] - 1 + rng.Uint64N(3)
			case 1: // a sizeable part of it
				whole = limits[u] / (1 + rng.Uint64N(4))
			case 2: // far beyond it
				whole = limits[u] * (2 + rng.Uint64N(1000))
			default: // small
				whole = rng.Uint64N(100)
			}
			b.WriteString(strconv.FormatUint(whole, 10))
			if rng.IntN(2) == 0 {
				frac := strconv.FormatUint(rng.Uint64(), 10)
				b.WriteString("." + frac[:1+rng.IntN(len(frac))])
			}
			b.WriteString(u)
		}
		inputs = append(inputs, b.String())
	}
	inputs = append(inputs, overflowingDurations...)
	inputs = append(inputs, validSpecDurations...)

	var parsed, refused int
	var mismatches []string
	for i, d := range inputs {
		g.Expect(pattern.MatchString(d)).To(BeTrue(), d)
		_, perr := time.ParseDuration(d)
		err := setDuration(t, f, ns, fmt.Sprintf("p-%d", i), d, true)
		if perr == nil {
			parsed++
		} else {
			refused++
		}
		if (err == nil) != (perr == nil) {
			mismatches = append(mismatches, fmt.Sprintf("%q: Go: %v, API server: %v", d, perr, err))
		}
	}
	g.Expect(mismatches).To(BeEmpty())
	// Both sides of the bound were tried.
	g.Expect(parsed).To(BeNumerically(">", 50))
	g.Expect(refused).To(BeNumerically(">", 50))
}

// TestUnparseableDurationStopsTheList shows what the validation prevents: in
// a copy of the GitRepository CRD without the duration rule, one object
// with an overflowing interval makes the list of every object of the kind,
// which an informer starts from, fail to decode; the same object is refused
// by the real CRD.
func TestUnparseableDurationStopsTheList(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	const group = "unvalidated.windlass.test"

	data, err := os.ReadFile(filepath.Join(RepoRoot(), "config", "crd", "bases", "source.toolkit.fluxcd.io_gitrepositories.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.Unmarshal(data, &crd)).To(Succeed())
	crd.Name = "gitrepositories." + group
	crd.Spec.Group = group
	crd.Spec.Names.ShortNames = nil
	crd.Spec.Names.Categories = nil
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		for _, name := range []string{"interval", "timeout"} {
			p := spec.Properties[name]
			g.Expect(p.XValidations).NotTo(BeEmpty())
			p.XValidations = nil
			spec.Properties[name] = p
		}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	g.Expect(env.Client.Create(ctx, &crd)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), &crd) })

	gv := schema.GroupVersion{Group: group, Version: "v1"}
	s := k8sruntime.NewScheme()
	s.AddKnownTypes(gv, &sourcev1.GitRepository{}, &sourcev1.GitRepositoryList{})
	metav1.AddToGroupVersion(s, gv)
	typed, err := client.New(env.Config, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())

	object := func(name, interval string) *unstructured.Unstructured {
		u := baseObject(durationFields[0], ns, name)
		u.SetAPIVersion(gv.String())
		g.Expect(unstructured.SetNestedField(u.Object, interval, "spec", "interval")).To(Succeed())
		return u
	}
	g.Eventually(func() error {
		return env.Client.Create(ctx, object("good", "1m"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	bad := object("bad", "9999999999h")
	g.Expect(env.Client.Create(ctx, bad)).To(Succeed())

	// The good object alone still decodes, but no list of the kind does.
	var repo sourcev1.GitRepository
	g.Expect(typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "good"}, &repo)).To(Succeed())
	var list sourcev1.GitRepositoryList
	g.Expect(typed.List(ctx, &list, client.InNamespace(ns))).To(MatchError(ContainSubstring(`invalid duration "9999999999h"`)))
	g.Expect(typed.List(ctx, &list)).NotTo(Succeed())

	g.Expect(env.Client.Delete(ctx, bad)).To(Succeed())
	g.Expect(typed.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))

	// The real CRD refuses the object.
	refused := baseObject(durationFields[0], ns, "bad")
	g.Expect(unstructured.SetNestedField(refused.Object, "9999999999h", "spec", "interval")).To(Succeed())
	g.Expect(env.Client.Create(ctx, refused)).To(MatchError(ContainSubstring("spec.interval: ")))
}
