package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
)

// Actions that make a release, as a Snapshot names them.
const (
	ActionInstall  = "install"
	ActionUpgrade  = "upgrade"
	ActionRollback = "rollback"
)

// Snapshot records rel for a HelmRelease's status.history: its digest
// ("sha256:<hex>" of its JSON encoding), identity, status as Helm writes
// it, chart, values digest (see ConfigDigest), times and the last runs of
// its test hooks. The action is inferred from the status and description
// the SDK writes, which is a guess for a release with a custom
// description: a caller that knows the action sets it. It returns nil for
// a nil release.
func Snapshot(rel *releasev1.Release) *helmv2.Snapshot {
	if rel == nil {
		return nil
	}
	s := &helmv2.Snapshot{
		Digest:       releaseDigest(rel),
		Name:         rel.Name,
		Namespace:    rel.Namespace,
		Version:      rel.Version,
		Action:       actionOf(rel),
		ConfigDigest: ConfigDigest(rel.Config),
	}
	if rel.Info != nil {
		s.Status = rel.Info.Status.String()
		s.FirstDeployed = metaTime(rel.Info.FirstDeployed)
		s.LastDeployed = metaTime(rel.Info.LastDeployed)
		s.Deleted = metaTime(rel.Info.Deleted)
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		s.ChartName = rel.Chart.Metadata.Name
		s.ChartVersion = rel.Chart.Metadata.Version
		s.AppVersion = rel.Chart.Metadata.AppVersion
	}
	if tests := testHooks(rel.Hooks); len(tests) > 0 {
		s.TestHooks = &tests
	}
	return s
}

// releaseDigest returns "sha256:<hex>" of the JSON encoding of rel.
func releaseDigest(rel *releasev1.Release) string {
	data, err := json.Marshal(rel)
	if err != nil {
		// A release read from storage was decoded from JSON; one that
		// cannot be encoded gets the digest of the error, which differs
		// from every release's.
		data = []byte(err.Error())
	}
	return digestOf(data)
}

// ConfigDigest returns "sha256:<hex>" of the canonical JSON encoding of
// values (keys sorted, no spaces); nil and empty values have the same
// digest. It is the ConfigDigest of the release's Snapshot.
func ConfigDigest(values map[string]any) string {
	if values == nil {
		values = map[string]any{}
	}
	data, err := json.Marshal(values)
	if err != nil {
		data = []byte(err.Error())
	}
	return digestOf(data)
}

// digestOf returns "sha256:<hex>" of data.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// metaTime converts t, keeping the zero time zero.
func metaTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	return metav1.NewTime(t)
}

// actionOf infers which action made rel.
func actionOf(rel *releasev1.Release) string {
	if rel.Info == nil {
		return ""
	}
	switch rel.Info.Status {
	case rcommon.StatusPendingInstall:
		return ActionInstall
	case rcommon.StatusPendingUpgrade:
		return ActionUpgrade
	case rcommon.StatusPendingRollback:
		return ActionRollback
	}
	switch d := rel.Info.Description; {
	case strings.HasPrefix(d, "Rollback "):
		return ActionRollback
	case strings.HasPrefix(d, "Upgrade "):
		return ActionUpgrade
	case d == "Install complete", rel.Version == 1:
		return ActionInstall
	default:
		return ActionUpgrade
	}
}

// testHooks returns the last runs of the test hooks among hooks, by name.
func testHooks(hooks []*releasev1.Hook) map[string]*helmv2.TestHookStatus {
	out := map[string]*helmv2.TestHookStatus{}
	for _, h := range hooks {
		if h == nil || !slices.Contains(h.Events, releasev1.HookTest) {
			continue
		}
		out[h.Name] = &helmv2.TestHookStatus{
			LastStarted:   metaTime(h.LastRun.StartedAt),
			LastCompleted: metaTime(h.LastRun.CompletedAt),
			Phase:         string(h.LastRun.Phase),
		}
	}
	return out
}

// ObjectsOf decodes the objects of a release manifest (YAML documents,
// "---" separated, as the release stores them), skipping empty documents
// and expanding Lists. An object without apiVersion or kind is an error.
func ObjectsOf(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding document %d of the manifest: %w", i+1, err)
		}
		if len(doc) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: doc}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" {
			return nil, fmt.Errorf("document %d of the manifest has no apiVersion or kind", i+1)
		}
		if !obj.IsList() {
			objs = append(objs, obj)
			continue
		}
		list, err := obj.ToList()
		if err != nil {
			return nil, fmt.Errorf("decoding the list in document %d of the manifest: %w", i+1, err)
		}
		for j := range list.Items {
			objs = append(objs, &list.Items[j])
		}
	}
}
