package ssa

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/inventory"
)

// stageCount is the number of apply stages.
const stageCount = 3

// clusterDefinitionKinds are applied in stage 1, besides CRDs and
// Namespaces.
var clusterDefinitionKinds = map[schema.GroupKind]bool{
	crdKind:       true,
	namespaceKind: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
}

// stageOf returns the stage (0, 1 or 2) in which objects of gk are applied:
// cluster definitions, then classes, then the rest.
func stageOf(gk schema.GroupKind) int {
	switch {
	case clusterDefinitionKinds[gk]:
		return 0
	case strings.HasSuffix(gk.Kind, "Class"):
		return 1
	default:
		return 2
	}
}

// waitForStage waits until the CRDs of stage 1 are established and their
// kinds resolve through the mapper, and its namespaces exist and are not
// terminating. Objects that were skipped are not waited for.
func (m *Manager) waitForStage(ctx context.Context, items []*item, timeout time.Duration) error {
	var pending []*item
	for _, it := range items {
		gk := it.id.GroupKind()
		if (gk == crdKind || gk == namespaceKind) && it.action != ActionSkipped {
			pending = append(pending, it)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	reasons := map[*item]string{}
	var fatal *ObjectError
	err := wait.PollUntilContextTimeout(ctx, m.pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		still := pending[:0]
		for _, it := range pending {
			var ready bool
			var reason string
			if it.id.GroupKind() == crdKind {
				ready, reason, fatal = m.crdReady(ctx, it)
			} else {
				ready, reason, fatal = m.namespaceReady(ctx, it)
			}
			if fatal != nil {
				return false, fatal
			}
			if !ready {
				if reason != "" {
					reasons[it] = reason
				}
				still = append(still, it)
			}
		}
		pending = still
		return len(pending) == 0, nil
	})
	if err == nil {
		return nil
	}
	if fatal != nil {
		return &ApplyError{Failures: []*ObjectError{fatal}}
	}
	failures := make([]*ObjectError, 0, len(pending))
	for _, it := range pending {
		reason := reasons[it]
		if reason == "" {
			reason = "no answer from the API server"
		}
		failures = append(failures, newObjectErrorf(it.id, "not ready after %s: %s", timeout, reason))
	}
	if !wait.Interrupted(err) {
		return err
	}
	return &ApplyError{Failures: failures}
}

// crdReady reports whether a CRD is established and every served version
// of its kind resolves through the mapper.
func (m *Manager) crdReady(ctx context.Context, it *item) (bool, string, *ObjectError) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(crdKind.WithVersion("v1"))
	if err := m.client.Get(ctx, client.ObjectKey{Name: it.desired.GetName()}, u); err != nil {
		return false, readReason(err), nil
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
		return false, "", newObjectErrorf(it.id, "decoding the CRD: %v", err)
	}
	established := false
	for _, c := range crd.Status.Conditions {
		switch {
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			return false, "", newObjectErrorf(it.id, "names not accepted: %s", c.Message)
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
			established = true
		}
	}
	if !established {
		return false, "not established yet", nil
	}
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if _, err := m.mapper.RESTMapping(gk, v.Name); err != nil {
			if meta.IsNoMatchError(err) {
				m.resetMapper()
			}
			return false, fmt.Sprintf("%s/%s not discovered yet", gk, v.Name), nil
		}
	}
	return true, "", nil
}

// namespaceReady reports whether a namespace exists and is not terminating.
func (m *Manager) namespaceReady(ctx context.Context, it *item) (bool, string, *ObjectError) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(namespaceKind.WithVersion("v1"))
	if err := m.client.Get(ctx, client.ObjectKey{Name: it.desired.GetName()}, u); err != nil {
		return false, readReason(err), nil
	}
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == "Terminating" {
		return false, "", newObjectErrorf(it.id, "the namespace is terminating")
	}
	return true, "", nil
}

// readReason describes a failed read for a timeout message. Failures that
// are not the API server's answer (the wait's own deadline, a connection
// reset) return "", so that the last real reason is kept.
func readReason(err error) string {
	if apierrors.IsNotFound(err) {
		return "not found"
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return "reading it: " + status.Status().Message
	}
	return ""
}

// waitGone waits until the object live stands for is deleted: a read finds
// nothing, or finds an object with another UID.
func (m *Manager) waitGone(ctx context.Context, id inventory.ObjMetadata, live *unstructured.Unstructured, timeout time.Duration) *ObjectError {
	err := wait.PollUntilContextTimeout(ctx, m.pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		return m.gone(ctx, live)
	})
	if err != nil {
		if wait.Interrupted(err) {
			return newObjectErrorf(id, "still terminating after %s", timeout)
		}
		return newObjectError(id, nil, err)
	}
	return nil
}

// gone reports whether the object live stands for no longer exists.
func (m *Manager) gone(ctx context.Context, live *unstructured.Unstructured) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(live.GroupVersionKind())
	err := m.client.Get(ctx, client.ObjectKeyFromObject(live), u)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, nil
	}
	return u.GetUID() != live.GetUID(), nil
}
