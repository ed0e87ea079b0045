package install

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/config"
	"github.com/windlass-dev/windlass/internal/build"
	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/monitoring"
)

// Defaults of Options.
const (
	// DefaultRegistry is where the released images are.
	DefaultRegistry = "ghcr.io/windlass-dev"
	// DefaultNamespace is the namespace of the reference implementation.
	DefaultNamespace = "flux-system"
	// ImageName is the image's name within the registry.
	ImageName = "windlass"
	// FieldManager is the server-side apply field manager of install.
	FieldManager = "windlass"
	// ServiceName is the artifact Service, named as in the reference so
	// that manifests written for it (http://source-controller.<ns>.svc)
	// work unchanged.
	ServiceName = "source-controller"
	// ReceiverServiceName is the webhook receiver's Service, named as in
	// the reference.
	ReceiverServiceName = "webhook-receiver"
	// EventsServiceName is the Service of the notification controller's
	// event endpoint in a split installation, named as in the reference.
	EventsServiceName = "notification-controller"
	// ImageTagsServiceName is the Service of the image reflector's tags
	// server, named as the reference names its image reflector's Service.
	ImageTagsServiceName = "image-reflector-controller"
	// ImageTagsPort is the container port of the image reflector's tags
	// server, named ImageTagsPortName.
	ImageTagsPort = 9095
	// ImageTagsPortName names ImageTagsPort in the pod; the image tags
	// Service targets it.
	ImageTagsPortName = "image-tags"
	// AllInOneDeployment is the Deployment that runs every controller.
	AllInOneDeployment = "windlass"
	// UIServiceName is the Service of the web UI.
	UIServiceName = "windlass-ui"
	// UIPort is the container port of the web UI, named UIPortName.
	UIPort = 9880
	// UIPortName names UIPort in the pod; the UI's Service targets it.
	UIPortName = "http-ui"
	// MetricsPort is the container port of the metrics (named
	// monitoring.MetricsPort).
	MetricsPort = 8080
)

// Labels of every installed object.
const (
	// PartOfLabel says the object belongs to Windlass.
	PartOfLabel = "app.kubernetes.io/part-of"
	// VersionLabel is the installed version.
	VersionLabel = "app.kubernetes.io/version"
	// ownerGroup prefixes the owner labels: NameLabel and NamespaceLabel.
	ownerGroup = "install.windlass.dev"
	// NameLabel marks what `windlass install` applied.
	NameLabel = ownerGroup + "/name"
	// NamespaceLabel is the namespace of the installation an object belongs
	// to; uninstall deletes the objects that carry it.
	NamespaceLabel = ownerGroup + "/namespace"
)

// baseImage is the image name written in config/manager/deployment.yaml.
const baseImage = "ghcr.io/windlass-dev/windlass"

// Options say what to install.
type Options struct {
	// Components are the controllers to run (manager.AllControllers when
	// empty).
	Components []string
	// Registry holds the image (DefaultRegistry when empty).
	Registry string
	// Version is the image tag (required).
	Version string
	// Namespace is where the controllers run (DefaultNamespace when empty).
	Namespace string
	// NetworkPolicy adds the NetworkPolicy of the controllers' pods.
	NetworkPolicy bool
	// Split runs one Deployment per controller rather than one for all.
	Split bool
	// UI serves the web UI, with sign-in by Kubernetes token, behind the
	// Service UIServiceName, and grants the controllers what sign-in needs
	// (token and access reviews, impersonation).
	UI bool
	// Monitoring adds what the Prometheus Operator and Grafana's sidecar
	// need: a PodMonitor of the controllers, a PrometheusRule of the
	// alerts and the dashboard's ConfigMap (package monitoring).
	Monitoring bool
	// Replicas is how many pods each Deployment runs (1 when zero): with
	// more than one, they share the objects (--shards=auto) and their
	// artifacts' URLs name the Service in front of them all.
	Replicas int
}

// DefaultVersion is the image tag that matches a client of version
// clientVersion: the same, or "latest" for a development build.
func DefaultVersion(clientVersion string) string {
	if clientVersion == "" || clientVersion == "dev" {
		return "latest"
	}
	return clientVersion
}

// tagPattern is what an image tag may be.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// complete validates o and fills in its defaults.
func (o Options) complete() (Options, error) {
	if o.Registry == "" {
		o.Registry = DefaultRegistry
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	o.Registry = strings.TrimSuffix(o.Registry, "/")
	if o.Registry == "" || strings.Contains(o.Registry, "://") || strings.ContainsAny(o.Registry, " @") {
		return o, fmt.Errorf("invalid --registry %q: give a registry and path such as ghcr.io/windlass-dev, without a scheme", o.Registry)
	}
	if !tagPattern.MatchString(o.Version) || len(validation.IsValidLabelValue(o.Version)) > 0 {
		return o, fmt.Errorf("invalid --version %q: give an image tag such as v0.1.0 (letters, digits, '.', '_' and '-', at most 63)", o.Version)
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return o, fmt.Errorf("invalid namespace %q: %s", o.Namespace, errs[0])
	}
	components, err := selectComponents(o.Components)
	if err != nil {
		return o, err
	}
	o.Components = components
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Replicas < 1 {
		return o, fmt.Errorf("invalid --replicas %d: at least 1", o.Replicas)
	}
	return o, nil
}

// selectComponents validates the controllers named (with or without the
// reference's "-controller" suffix) and returns them in setup order; none
// means all.
func selectComponents(names []string) ([]string, error) {
	if len(names) == 0 {
		return slices.Clone(manager.AllControllers), nil
	}
	wanted := map[string]bool{}
	for _, name := range names {
		name = strings.TrimSuffix(strings.TrimSpace(name), "-controller")
		if !slices.Contains(manager.AllControllers, name) {
			return nil, fmt.Errorf("unknown component %q: choose from %s", name, strings.Join(manager.AllControllers, ", "))
		}
		wanted[name] = true
	}
	var out []string
	for _, name := range manager.AllControllers {
		if wanted[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// Image returns the controllers' image reference.
func (o Options) Image() string {
	return o.Registry + "/" + ImageName + ":" + o.Version
}

// Manifests are the rendered objects of an installation, in the order they
// are printed and applied: CRDs, the Namespace, then the rest in
// kustomize's order.
type Manifests struct {
	resources []*resource.Resource
	// Options are the options the manifests were rendered with, defaults
	// filled in.
	Options Options
}

// Objects returns the objects as unstructured, to apply them.
func (m *Manifests) Objects() ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, 0, len(m.resources))
	for _, r := range m.resources {
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", r.CurId(), err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", r.CurId(), err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// YAML returns the objects as a multi-document YAML stream.
func (m *Manifests) YAML() ([]byte, error) {
	var buf bytes.Buffer
	for _, r := range m.resources {
		data, err := r.AsYAML()
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", r.CurId(), err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.Bytes(), nil
}

// DeploymentNames returns the names of the Deployments the manifests hold.
func (m *Manifests) DeploymentNames() []string {
	var names []string
	for _, r := range m.resources {
		if r.GetKind() == "Deployment" {
			names = append(names, r.GetName())
		}
	}
	return names
}

// Render builds the manifests of an installation from the kustomizations
// embedded in package config, through the kustomize API on an in-memory
// file system.
func Render(opts Options) (*Manifests, error) {
	opts, err := opts.complete()
	if err != nil {
		return nil, err
	}
	fsys, err := loadConfig()
	if err != nil {
		return nil, err
	}
	if err := writeOverlay(fsys, opts); err != nil {
		return nil, err
	}
	resources, err := runKustomize(fsys)
	if err != nil {
		return nil, err
	}
	return &Manifests{resources: sortResources(resources), Options: opts}, nil
}

// configRoot and overlayRoot are where the embedded kustomizations and the
// overlay that Render writes live in the in-memory file system.
const (
	configRoot  = "/config"
	overlayRoot = "/install"
)

// loadConfig copies the embedded manifests into an in-memory file system.
func loadConfig() (filesys.FileSystem, error) {
	fsys := filesys.MakeFsInMemory()
	err := fs.WalkDir(config.Manifests, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := config.Manifests.ReadFile(p)
		if err != nil {
			return err
		}
		return fsys.WriteFile(path.Join(configRoot, p), data)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded manifests: %w", err)
	}
	return fsys, nil
}

// runKustomize builds the overlay, exclusive of the controllers' builds
// in the same process (kustomize keeps process-wide state).
func runKustomize(fsys filesys.FileSystem) (out []*resource.Resource, err error) {
	build.Exclusively(func() { out, err = kustomizeOverlay(fsys) })
	return out, err
}

// kustomizeOverlay runs kustomize on the overlay, a panic turned into an
// error.
func kustomizeOverlay(fsys filesys.FileSystem) (out []*resource.Resource, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("kustomize panicked while rendering the manifests: %v", r)
		}
	}()
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          krusty.ReorderOptionLegacy,
		LoadRestrictions: types.LoadRestrictionsRootOnly,
		PluginConfig:     types.DisabledPluginConfig(),
	})
	m, err := k.Run(fsys, overlayRoot)
	if err != nil {
		return nil, fmt.Errorf("rendering the manifests: %w", err)
	}
	return m.Resources(), nil
}

// sortResources puts the CRDs first, then the Namespace, then the rest in
// the order kustomize gave them.
func sortResources(rs []*resource.Resource) []*resource.Resource {
	rank := func(r *resource.Resource) int {
		switch r.GetKind() {
		case "CustomResourceDefinition":
			return 0
		case "Namespace":
			return 1
		}
		return 2
	}
	out := slices.Clone(rs)
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

// deployment is one Deployment of an installation.
type deployment struct {
	name        string
	controllers []string
	// ui is true for the Deployment that serves the web UI.
	ui bool
}

// deployments returns the Deployments of o: one for all, or one per
// controller named as in the reference ("source-controller").
func (o Options) deployments() []deployment {
	if !o.Split {
		return []deployment{{name: AllInOneDeployment, controllers: o.Components}}
	}
	out := make([]deployment, 0, len(o.Components))
	for _, c := range o.Components {
		out = append(out, deployment{name: c + "-controller", controllers: []string{c}})
	}
	return out
}

// runs reports whether d runs the controller called name.
func (d deployment) runs(name string) bool {
	return slices.Contains(d.controllers, name)
}

// podIPVariable is the environment variable that holds the pod's address
// when the replicas share the objects.
const podIPVariable = "POD_IP"

// ArtifactPort is the port the source controller serves artifacts on.
const ArtifactPort = 9090

// args are the arguments of d's container. The source controller and the
// image reflector keep their files under /data (an emptyDir). In a split
// installation the notification controller serves its event endpoint, and
// the other controllers post their events to it.
func (d deployment) args(split, notifications bool, replicas int) []string {
	args := []string{"controller", "--controllers=" + strings.Join(d.controllers, ","), "--enable-leader-election", "--log-encoding=json"}
	if replicas > 1 {
		args[2] = "--shards=" + manager.ShardsAuto
	}
	if d.runs(manager.SourceController) || d.runs(manager.ImageReflectorController) {
		args = append(args, "--storage-path=/data")
	}
	if d.runs(manager.SourceController) {
		// With replicas, each serves the artifacts of the sources it
		// holds, at the address its Lease publishes ($POD_IP), and passes
		// a download the Service sent it to the holder: an artifact's URL
		// names the Service, and survives the replica that stored it.
		args = append(args, "--storage-adv-addr="+ServiceName+".$(RUNTIME_NAMESPACE).svc")
	}
	if d.runs(manager.ImageReflectorController) {
		args = append(args, fmt.Sprintf("--image-tags-addr=:%d", ImageTagsPort))
	}
	if d.ui {
		args = append(args, fmt.Sprintf("--ui-addr=:%d", UIPort), "--ui-signin=token")
	}
	switch {
	case split && d.runs(manager.NotificationController):
		args = append(args, "--events-listen-addr=:9090")
	case split && notifications:
		args = append(args, "--events-addr=http://"+EventsServiceName+".$(RUNTIME_NAMESPACE).svc./")
	}
	return args
}

// podService is a Service in front of what one controller serves: its
// selector is patched to the pods of the Deployment that runs it.
type podService struct {
	controller string
	// dir is the kustomization of the Service, relative to the overlay.
	dir  string
	name string
}

// podServices are the Services of the controllers that serve something.
var podServices = []podService{
	{controller: manager.SourceController, dir: "../config/service", name: ServiceName},
	{controller: manager.NotificationController, dir: "../config/receiver", name: ReceiverServiceName},
	{controller: manager.ImageReflectorController, dir: "../config/image-tags", name: ImageTagsServiceName},
}

// jsonPatch is one RFC 6902 operation.
type jsonPatch struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// writeOverlay writes the kustomization that renders o: the embedded
// kustomizations, one overlay per Deployment, the namespace, labels, image
// and the names of the cluster-scoped objects.
func writeOverlay(fsys filesys.FileSystem, o Options) error {
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Namespace: o.Namespace,
		Resources: []string{"../config/crd", "../config/namespace", "../config/rbac"},
		Labels: []types.Label{{Pairs: map[string]string{
			PartOfLabel: "windlass", VersionLabel: o.Version, NameLabel: "windlass", NamespaceLabel: o.Namespace,
		}, IncludeTemplates: true}},
		Images:       []types.Image{{Name: baseImage, NewName: o.Registry + "/" + ImageName, NewTag: o.Version}},
		Transformers: []string{"cluster-names.yaml"},
	}
	notifications := slices.Contains(o.Components, manager.NotificationController)
	pods := map[string]string{} // controller: the Deployment that runs it
	for i, d := range o.deployments() {
		dir := "deployments/" + d.name
		k.Resources = append(k.Resources, dir)
		d.ui = o.UI && i == 0
		if err := writeDeployment(fsys, path.Join(overlayRoot, dir), d, d.args(o.Split, notifications, o.Replicas), o.Replicas); err != nil {
			return err
		}
		if d.ui {
			k.Resources = append(k.Resources, "../config/ui")
			k.Patches = append(k.Patches, mustPatch("Service", UIServiceName, false,
				jsonPatch{Op: "replace", Path: "/spec/selector/app", Value: d.name}))
		}
		for _, c := range d.controllers {
			pods[c] = d.name
		}
	}
	for _, svc := range podServices {
		if pods[svc.controller] == "" {
			continue
		}
		k.Resources = append(k.Resources, svc.dir)
		k.Patches = append(k.Patches, mustPatch("Service", svc.name, false,
			jsonPatch{Op: "replace", Path: "/spec/selector/app", Value: pods[svc.controller]}))
	}
	if o.Split && notifications {
		k.Resources = append(k.Resources, "../config/events")
	}
	if o.NetworkPolicy {
		k.Resources = append(k.Resources, "../config/networkpolicy")
	}
	if o.NetworkPolicy && o.UI {
		// The UI signs its users in: browsers reach it through an ingress.
		k.Patches = append(k.Patches, mustPatch("NetworkPolicy", "windlass", false, jsonPatch{Op: "add", Path: "/spec/ingress/-",
			Value: map[string]any{"ports": []any{map[string]any{"protocol": "TCP", "port": UIPort}}}}))
	}
	if o.NetworkPolicy && o.Monitoring {
		// Prometheus scrapes the metrics port from its own namespace.
		k.Patches = append(k.Patches, mustPatch("NetworkPolicy", "windlass", false, jsonPatch{Op: "add", Path: "/spec/ingress/-",
			Value: map[string]any{"ports": []any{map[string]any{"protocol": "TCP", "port": MetricsPort}}}}))
	}
	if o.Monitoring {
		k.Resources = append(k.Resources, "monitoring")
		if err := writeMonitoring(fsys, path.Join(overlayRoot, "monitoring")); err != nil {
			return err
		}
	}
	files := map[string]any{
		"kustomization.yaml": k,
		"cluster-names.yaml": clusterNames(o.Namespace),
	}
	for name, v := range files {
		if err := writeYAML(fsys, path.Join(overlayRoot, name), v); err != nil {
			return err
		}
	}
	return nil
}

// writeMonitoring writes the kustomization of the monitoring objects, with
// the default thresholds of the alerts, into dir.
func writeMonitoring(fsys filesys.FileSystem, dir string) error {
	objs, err := monitoring.Objects(DefaultNamespace, monitoring.DefaultRuleOptions)
	if err != nil {
		return err
	}
	k := types.Kustomization{}
	for _, obj := range objs {
		name := strings.ToLower(obj.GetKind()) + ".yaml"
		if err := writeYAML(fsys, path.Join(dir, name), obj.Object); err != nil {
			return err
		}
		k.Resources = append(k.Resources, name)
	}
	return writeYAML(fsys, path.Join(dir, "kustomization.yaml"), k)
}

// writeDeployment writes the overlay of one Deployment, whose container
// runs with args, into dir. Every Deployment has the emptyDirs of the base
// at /data and /tmp (the root file system is read-only); the one that runs
// the image reflector also exposes the image tags port.
func writeDeployment(fsys filesys.FileSystem, dir string, d deployment, args []string, replicas int) error {
	ops := []jsonPatch{
		{Op: "replace", Path: "/metadata/name", Value: d.name},
		{Op: "replace", Path: "/spec/replicas", Value: replicas},
		{Op: "replace", Path: "/spec/selector/matchLabels/app", Value: d.name},
		{Op: "replace", Path: "/spec/template/metadata/labels/app", Value: d.name},
		{Op: "replace", Path: "/spec/template/spec/containers/0/args", Value: args},
	}
	if replicas > 1 {
		ops = append(ops, jsonPatch{Op: "add", Path: "/spec/template/spec/containers/0/env/-", Value: map[string]any{
			"name": podIPVariable, "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "status.podIP"}},
		}})
	}
	if d.runs(manager.ImageReflectorController) {
		ops = append(ops, jsonPatch{Op: "add", Path: "/spec/template/spec/containers/0/ports/-",
			Value: map[string]any{"name": ImageTagsPortName, "containerPort": ImageTagsPort, "protocol": "TCP"}})
	}
	if d.ui {
		ops = append(ops, jsonPatch{Op: "add", Path: "/spec/template/spec/containers/0/ports/-",
			Value: map[string]any{"name": UIPortName, "containerPort": UIPort, "protocol": "TCP"}})
	}
	k := types.Kustomization{
		Resources: []string{"../../../config/manager"},
		Patches:   []types.Patch{mustPatch("Deployment", AllInOneDeployment, true, ops...)},
	}
	return writeYAML(fsys, path.Join(dir, "kustomization.yaml"), k)
}

// mustPatch returns a JSON 6902 patch of the object kind/name.
func mustPatch(kind, name string, rename bool, ops ...jsonPatch) types.Patch {
	data, err := yaml.Marshal(ops)
	if err != nil {
		panic(err) // plain values always marshal
	}
	p := types.Patch{Patch: string(data), Target: &types.Selector{ResId: resid.ResId{Gvk: resid.Gvk{Kind: kind}, Name: name}}}
	if rename {
		p.Options = &types.PatchArgs{AllowNameChange: true}
	}
	return p
}

// clusterNames is the transformer that suffixes the names of the
// cluster-scoped RBAC objects with the namespace, so that two
// installations do not share them.
func clusterNames(namespace string) map[string]any {
	spec := func(kind string) map[string]any {
		return map[string]any{"group": "rbac.authorization.k8s.io", "kind": kind, "path": "metadata/name"}
	}
	return map[string]any{
		"apiVersion": "builtin",
		"kind":       "PrefixSuffixTransformer",
		"metadata":   map[string]any{"name": "cluster-names"},
		"suffix":     "-" + namespace,
		"fieldSpecs": []any{spec("ClusterRole"), spec("ClusterRoleBinding")},
	}
}

// writeYAML writes v as YAML to name.
func writeYAML(fsys filesys.FileSystem, name string, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	if err := fsys.WriteFile(name, data); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
