package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/inventory"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Bounds of a workload's pods page: how many pods and containers it
// shows, how many lines and bytes of each log, and for how long it reads.
const (
	maxPodsShown       = 10
	maxContainersShown = 5
	podLogLines        = 100
	podLogBytes        = 64 << 10
	podsTimeout        = 15 * time.Second
)

// workloadKinds are the kinds whose pods a page shows, by group and kind.
var workloadKinds = []string{"apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "apps/ReplicaSet", "batch/Job", "/Pod"}

// isWorkload reports whether the object of an inventory ID runs pods.
func isWorkload(id string) bool {
	m, err := inventory.Entry{ID: id}.ObjMetadata()
	return err == nil && slices.Contains(workloadKinds, m.Group+"/"+m.Kind)
}

// podsPage is what the pods of one applied workload show.
type podsPage struct {
	Row      row
	Workload string
	Pods     []podView
	// More counts the pods past maxPodsShown.
	More int
	Err  string
}

// podView is one pod with its containers' latest log lines.
type podView struct {
	Name, Phase, Node string
	Containers        []containerLog
}

// containerLog is the end of one container's log, or why there is none.
type containerLog struct {
	Name, Log, Missing string
}

// pods serves the pods of a workload that a Kustomization or HelmRelease
// applied (the workload query names its inventory ID), each container
// with the end of its log, read as the page's user: the API server asks
// the pod's kubelet. It is no live page.
func (s *Server) pods(w http.ResponseWriter, r *http.Request) {
	k, obj, ok := s.pageObject(w, r)
	if !ok {
		return
	}
	id := r.URL.Query().Get("workload")
	if !slices.ContainsFunc(inventoryEntries(obj), func(e inventory.Entry) bool { return e.ID == id }) || !isWorkload(id) {
		s.fail(w, http.StatusNotFound, fmt.Sprintf("%s %s/%s applied no workload %q", k.Kind, obj.GetNamespace(), obj.GetName(), id))
		return
	}
	live, podsAPI, err := s.liveAs(r)
	if err != nil || podsAPI == nil {
		s.fail(w, http.StatusNotFound, "this UI cannot read pods")
		return
	}
	meta, _ := inventory.Entry{ID: id}.ObjMetadata()
	page := podsPage{Row: s.row(k, obj), Workload: meta.Subject()}
	ctx, cancel := context.WithTimeout(r.Context(), podsTimeout)
	defer cancel()
	pods, err := workloadPods(ctx, live, meta)
	if err != nil {
		page.Err = redact.String(err.Error())
	}
	page.More = max(len(pods)-maxPodsShown, 0)
	for _, p := range pods[:len(pods)-page.More] {
		page.Pods = append(page.Pods, podViewOf(ctx, podsAPI, p))
	}
	s.render(w, "pods", page)
}

// workloadPods returns the pods of the workload m: those its selector
// selects, or the pod itself.
func workloadPods(ctx context.Context, c client.Client, m inventory.ObjMetadata) ([]corev1.Pod, error) {
	if m.Kind == "Pod" {
		var pod corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, &pod); err != nil {
			return nil, err
		}
		return []corev1.Pod{pod}, nil
	}
	workload := &unstructured.Unstructured{}
	workload.SetAPIVersion(m.Group + "/v1")
	workload.SetKind(m.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, workload); err != nil {
		return nil, err
	}
	raw, found, err := unstructured.NestedMap(workload.Object, "spec", "selector")
	if err != nil || !found {
		return nil, fmt.Errorf("%s has no pod selector", m.Subject())
	}
	var selector metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &selector); err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(&selector)
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(m.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// podViewOf reads the end of each container's log of pod.
func podViewOf(ctx context.Context, podsAPI corev1client.PodsGetter, pod corev1.Pod) podView {
	v := podView{Name: pod.Name, Phase: string(pod.Status.Phase), Node: pod.Spec.NodeName}
	for i, c := range pod.Spec.Containers {
		if i == maxContainersShown {
			break
		}
		cl := containerLog{Name: c.Name}
		if pod.Spec.NodeName == "" {
			cl.Missing = "the pod is on no node yet, so it has no log"
		} else {
			cl.Log, cl.Missing = containerLogOf(ctx, podsAPI, pod, c.Name)
		}
		v.Containers = append(v.Containers, cl)
	}
	return v
}

// containerLogOf returns the end of a container's log, or why it could
// not be read.
func containerLogOf(ctx context.Context, podsAPI corev1client.PodsGetter, pod corev1.Pod, container string) (string, string) {
	req := podsAPI.Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container,
		TailLines: ptr.To[int64](podLogLines), LimitBytes: ptr.To[int64](podLogBytes)})
	stream, err := req.Stream(ctx)
	if err != nil {
		return "", "the log could not be read: " + redact.String(err.Error())
	}
	defer stream.Close()
	data, err := io.ReadAll(io.LimitReader(stream, podLogBytes))
	if err != nil && !errors.Is(err, io.EOF) {
		return string(data), "the log was cut: " + redact.String(err.Error())
	}
	if len(data) == 0 {
		return "", "the log is empty"
	}
	return string(data), ""
}
