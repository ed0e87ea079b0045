package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/kinds"
)

// maxValuesBytes bounds a --values file: the HelmRelease that holds its
// values must fit in an object of the API server.
const maxValuesBytes = 1 << 20

// maxReleaseNameLength is the longest name Helm gives a release.
const maxReleaseNameLength = 53

// helmReleaseFlags are the flags of `create helmrelease`.
type helmReleaseFlags struct {
	source, chart, chartVersion, chartRef string
	releaseName                           string
	targetNamespace, storageNamespace     string
	createTargetNamespace                 bool
	dependsOn                             []string
	valuesFiles, valuesFrom               []string
	serviceAccount                        string
	driftDetection                        string
	interval, releaseTimeout              time.Duration
}

// chartRefKinds are the kinds a HelmRelease's chartRef may name.
var chartRefKinds = kinds.Names(kinds.SourcesFor(kinds.ChartRef))

func newCreateHelmReleaseCommand(f *createFlags) *cobra.Command {
	h := &helmReleaseFlags{}
	cmd := &cobra.Command{
		Use:     "helmrelease NAME",
		Aliases: []string{"hr"},
		Short:   "Create or update a HelmRelease",
		Long: `Create or update a HelmRelease: a Helm release that the helm controller installs
and keeps equal to its declaration. Its chart comes either from --source (a
HelmRepository, GitRepository or Bucket) and --chart, of which the
controller makes a HelmChart, or from --chart-ref, an OCIRepository or
HelmChart that exists.

Values come from the --values-from ConfigMaps and Secrets (their key
values.yaml), merged in order, then from the --values files, which are
merged in order into spec.values and so written into the HelmRelease.`,
		Example: `  windlass create helmrelease podinfo --source HelmRepository/podinfo --chart podinfo --chart-version ">=6.0.0" \
    --target-namespace web --create-target-namespace --values ./podinfo-values.yaml
  windlass create hr app --chart-ref OCIRepository/app-chart --depends-on db,Kustomization/flux-system/infra \
    --values-from Secret/app-values --drift-detection enabled
  windlass create hr podinfo --source HelmRepository/podinfo.flux-system --chart podinfo --export > podinfo.yaml`,
		Args: nameArg,
		RunE: applyCreated(f, h.object),
	}
	fs := cmd.Flags()
	fs.StringVar(&h.source, "source", "", "the source of the chart: Kind/[NAMESPACE/]NAME or Kind/NAME.NAMESPACE, Kind one of HelmRepository, GitRepository, Bucket")
	fs.StringVar(&h.chart, "chart", "", "with --source: the chart's name in a HelmRepository, or its folder in a GitRepository or Bucket")
	fs.StringVar(&h.chartVersion, "chart-version", "", "with --source HelmRepository/...: a semver range of the chart's versions (default *, the newest)")
	fs.StringVar(&h.chartRef, "chart-ref", "", "instead of --source: the chart's source, OCIRepository/[NAMESPACE/]NAME or HelmChart/[NAMESPACE/]NAME")
	fs.StringVar(&h.releaseName, "release-name", "", "the name of the Helm release (default: [TARGET-NAMESPACE-]NAME)")
	fs.StringVar(&h.targetNamespace, "target-namespace", "", "the namespace to install the release in (default: the HelmRelease's)")
	fs.StringVar(&h.storageNamespace, "storage-namespace", "", "the namespace of Helm's release records (default: the HelmRelease's)")
	fs.BoolVar(&h.createTargetNamespace, "create-target-namespace", false, "create the target namespace on install when it is missing")
	fs.StringSliceVar(&h.dependsOn, "depends-on", nil, "what must be Ready first: [Kind/][NAMESPACE/]NAME, Kind HelmRelease (the default) or Kustomization (repeat or separate with commas)")
	fs.StringSliceVar(&h.valuesFiles, "values", nil, "a YAML file of values, merged into spec.values (repeat or separate with commas; later files win)")
	fs.StringSliceVar(&h.valuesFrom, "values-from", nil, "a ConfigMap/NAME or Secret/NAME whose values.yaml is merged before spec.values (repeat or separate with commas)")
	fs.StringVar(&h.serviceAccount, "service-account", "", "run the Helm actions as this service account")
	fs.StringVar(&h.driftDetection, "drift-detection", "", "compare the cluster with the release: disabled (the default), warn, or enabled (correct it)")
	fs.DurationVar(&h.interval, "interval", time.Minute, "how often the release is reconciled")
	fs.DurationVar(&h.releaseTimeout, "release-timeout", 0, "how long each Helm action may take (spec.timeout; the controller's default is 5m)")
	return cmd
}

// object returns the HelmRelease the flags declare, or the first flag
// that is wrong.
func (h *helmReleaseFlags) object(name string, f *createFlags) (*helmv2.HelmRelease, error) {
	om, err := f.objectMeta(name)
	if err != nil {
		return nil, err
	}
	spec := helmv2.HelmReleaseSpec{ReleaseName: h.releaseName, TargetNamespace: h.targetNamespace,
		StorageNamespace: h.storageNamespace, ServiceAccountName: h.serviceAccount}
	if err := h.chartOf(&spec); err != nil {
		return nil, err
	}
	if spec.Interval, err = positiveDuration("--interval", h.interval); err != nil {
		return nil, err
	}
	if spec.Timeout, err = optionalDuration("--release-timeout", h.releaseTimeout); err != nil {
		return nil, err
	}
	if err := h.checkNames(); err != nil {
		return nil, err
	}
	if h.createTargetNamespace {
		spec.Install = &helmv2.Install{CreateNamespace: true}
	}
	if spec.DependsOn, err = parseKindedDependsOn(helmv2.HelmReleaseKind, h.dependsOn); err != nil {
		return nil, err
	}
	if spec.ValuesFrom, err = parseValuesFrom(h.valuesFrom); err != nil {
		return nil, err
	}
	if spec.Values, err = readValuesFiles(h.valuesFiles); err != nil {
		return nil, err
	}
	if spec.DriftDetection, err = driftDetection(h.driftDetection); err != nil {
		return nil, err
	}
	return &helmv2.HelmRelease{ObjectMeta: om, Spec: spec}, nil
}

// chartOf sets the chart template or the chart reference of spec: one of
// --source with --chart, or --chart-ref.
func (h *helmReleaseFlags) chartOf(spec *helmv2.HelmReleaseSpec) error {
	switch {
	case h.source != "" && h.chartRef != "":
		return errors.New("--source and --chart-ref: choose one (--source with --chart makes a HelmChart; --chart-ref names one, or an OCIRepository)")
	case h.chartRef != "" && (h.chart != "" || h.chartVersion != ""):
		return errors.New("--chart and --chart-version go with --source: the chart of --chart-ref is the one its source holds")
	case h.source == "" && h.chartRef == "":
		return errors.New("--source with --chart, or --chart-ref, is required: where the chart comes from")
	case h.chartRef != "":
		ref, err := parseKindRef("--chart-ref", h.chartRef, chartRefKinds, true)
		spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: ref.kind, Name: ref.name, Namespace: ref.namespace}
		return err
	}
	ref, err := parseKindRef("--source", h.source, chartSourceKinds, true)
	if err != nil {
		return err
	}
	tmpl, err := checkChartTemplate(ref.kind, h.chart, h.chartVersion, "", nil)
	if err != nil {
		return err
	}
	spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: tmpl.chart, Version: tmpl.version,
		SourceRef: helmv2.CrossNamespaceObjectReference{Kind: ref.kind, Name: ref.name, Namespace: ref.namespace}}}
	return nil
}

// checkNames checks the names the flags give.
func (h *helmReleaseFlags) checkNames() error {
	for flag, ns := range map[string]string{"--target-namespace": h.targetNamespace, "--storage-namespace": h.storageNamespace} {
		if ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("%s %q is not a namespace name: %s", flag, ns, errs[0])
		}
	}
	if h.createTargetNamespace && h.targetNamespace == "" {
		return errors.New("--create-target-namespace needs --target-namespace: the HelmRelease's own namespace exists")
	}
	if h.releaseName != "" {
		if len(h.releaseName) > maxReleaseNameLength {
			return fmt.Errorf("--release-name %q is longer than Helm allows: at most %d characters", h.releaseName, maxReleaseNameLength)
		}
		if err := checkName("--release-name", h.releaseName); err != nil {
			return err
		}
	}
	if h.serviceAccount != "" {
		return checkName("--service-account", h.serviceAccount)
	}
	return nil
}

// parseKindedDependsOn parses the --depends-on values of an object of kind
// own, [Kind/][NAMESPACE/]NAME each, Kind HelmRelease or Kustomization: no
// kind, or own, is written as none (the dependent's own kind).
func parseKindedDependsOn(own string, values []string) ([]meta.DependencyReference, error) {
	var deps []meta.DependencyReference
	for _, v := range values {
		parts := strings.Split(v, "/")
		kind := ""
		if len(parts) == 3 || (len(parts) == 2 && (strings.ToLower(parts[0]) != parts[0] || dependencyKind(parts[0]) != "")) {
			kind = dependencyKind(parts[0])
			if kind == "" {
				return nil, fmt.Errorf("--depends-on %q: the kind %q is not HelmRelease or Kustomization", v, parts[0])
			}
			if kind == own {
				kind = ""
			}
			parts = parts[1:]
		}
		if len(parts) > 2 {
			return nil, fmt.Errorf("--depends-on %q has too many parts: use [Kind/][NAMESPACE/]NAME", v)
		}
		dep, err := parseDependsOn([]string{strings.Join(parts, "/")})
		if err != nil {
			return nil, err
		}
		dep[0].Kind = kind
		deps = append(deps, dep[0])
	}
	return deps, nil
}

// dependencyKind returns the kind s names, in any case, when an object
// may depend on objects of that kind; else "".
func dependencyKind(s string) string {
	for _, kind := range kinds.Names(kinds.WithDependsOn()) {
		if strings.EqualFold(s, kind) {
			return kind
		}
	}
	return ""
}

// parseValuesFrom parses the --values-from values, ConfigMap/NAME or
// Secret/NAME each.
func parseValuesFrom(values []string) ([]helmv2.ValuesReference, error) {
	var refs []helmv2.ValuesReference
	for _, v := range values {
		ref, err := parseKindRef("--values-from", v, []string{"ConfigMap", "Secret"}, false)
		if err != nil {
			return nil, err
		}
		refs = append(refs, helmv2.ValuesReference{Kind: ref.kind, Name: ref.name})
	}
	return refs, nil
}

// driftDetection returns the drift detection of --drift-detection, or nil
// when it is not given.
func driftDetection(mode string) (*helmv2.DriftDetection, error) {
	switch mode {
	case "":
		return nil, nil
	case helmv2.DriftDetectionDisabled, helmv2.DriftDetectionWarn, helmv2.DriftDetectionEnabled:
		return &helmv2.DriftDetection{Mode: mode}, nil
	}
	return nil, fmt.Errorf("--drift-detection %q is not a mode: choose disabled, warn or enabled", mode)
}

// readValuesFiles reads the --values files, YAML maps each, and merges
// them in order: a later file's keys win, maps merged key by key. It
// returns nil without files.
func readValuesFiles(paths []string) (*apiextensionsv1.JSON, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	merged := map[string]any{}
	for _, p := range paths {
		values, err := readValuesFile(p)
		if err != nil {
			return nil, err
		}
		mergeValues(merged, values)
	}
	if len(merged) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, fmt.Errorf("writing the --values: %w", err)
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}

// readValuesFile reads one --values file, at most maxValuesBytes, as a
// YAML map; numbers keep their digits.
func readValuesFile(path string) (map[string]any, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading --values: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxValuesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading --values %s: %w", path, err)
	}
	if len(data) > maxValuesBytes {
		return nil, fmt.Errorf("--values %s is larger than %d KiB: put large values in a ConfigMap and pass --values-from", path, maxValuesBytes>>10)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("--values %s is not YAML: %s", path, firstLine(err.Error()))
	}
	values := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&values); err != nil {
		return nil, fmt.Errorf("--values %s is not a map of values, like \"replicaCount: 2\"", path)
	}
	return values, nil
}

// mergeValues merges src into dst: maps key by key, anything else
// replaced.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if into, ok := dst[k].(map[string]any); ok {
				mergeValues(into, sub)
				continue
			}
		}
		dst[k] = v
	}
}
