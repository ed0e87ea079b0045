package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ControllersNone runs no controller: the benchmark applies the
// applications' objects itself, to measure the floor that the control
// plane sets under any controller.
const ControllersNone = "none"

// floorFieldManager is the field manager of the floor's applies.
const floorFieldManager = "bench-floor"

// runFloor measures the floor under every controller on this machine: the
// objects of cfg.N applications (those a Kustomization of the repo-per-app
// layout applies) applied server-side by the benchmark itself,
// cfg.Concurrent applications at a time (withDefaults sets it), each object once, then the wait
// until every Deployment is Current, on the same control plane with
// kube-controller-manager. No source is fetched, built or recorded, and no
// status is written: what a run with controllers takes beyond this is
// theirs. With cfg.ProfileDir, kube-apiserver's CPU is profiled from the
// first apply on.
func runFloor(ctx context.Context, cl *Cluster, cfg Config) (*Result, error) {
	if cl == nil {
		var err error
		if cl, err = startCluster(ControllersNone, false, cfg.Log); err != nil {
			return nil, err
		}
		defer cl.Stop(cfg.Log)
	}
	restCfg := rest.CopyConfig(cl.Env.Config)
	restCfg.QPS, restCfg.Burst = 1000, 2000
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: cl.Env.Scheme})
	if err != nil {
		return nil, err
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}
	if err := c.Create(ctx, nsObj); err != nil {
		return nil, fmt.Errorf("creating the namespace: %w", err)
	}
	apps, err := floorApps(nsObj.Name, cfg.N)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	res := &Result{N: cfg.N, Source: "none (the benchmark applies)", Layout: LayoutRepoPerApp}
	cpu0, served0 := processCPU(), serverRequestsOrNil(ctx, restCfg)
	started := time.Now()
	current, err := watchDeploymentsCurrent(ctx, c, nsObj.Name, cfg.N)
	if err != nil {
		return nil, err
	}
	if cfg.ProfileDir != "" {
		profiled := profileTargets(ctx, cfg, restCfg, "floor-", nil, func(format string, args ...any) {
			fmt.Fprintf(cfg.Log, "bench: "+format+"\n", args...)
		})
		defer profiled()
	}
	if err := applyApps(ctx, c, apps, cfg.Concurrent); err != nil {
		return nil, err
	}
	if err := <-current; err != nil {
		return nil, err
	}
	res.ReadySeconds = time.Since(started).Seconds()
	res.Details.Concurrent = cfg.Concurrent
	res.Details.ReadyCPU = cpuDelta(cpu0, processCPU())
	res.Details.ReadyServerRequests = requestDelta(served0, serverRequestsOrNil(ctx, restCfg))
	fmt.Fprintf(cfg.Log, "bench: floor n=%d: every Deployment Current %.2fs after the first apply\n", cfg.N, res.ReadySeconds)
	return res, nil
}

// floorApps returns the objects of each of n applications in namespace
// ns, as the repo-per-app Kustomizations apply them.
func floorApps(ns string, n int) ([][]*unstructured.Unstructured, error) {
	apps := make([][]*unstructured.Unstructured, n)
	for i := range n {
		docs := strings.ReplaceAll(appManifests(1), "${app}", appName(i))
		for doc := range strings.SplitSeq(docs, "\n---\n") {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				return nil, fmt.Errorf("decoding the workload: %w", err)
			}
			obj.SetNamespace(ns)
			apps[i] = append(apps[i], obj)
		}
	}
	return apps, nil
}

// applyApps applies the objects of each application, concurrent
// applications at a time.
func applyApps(ctx context.Context, c client.Client, apps [][]*unstructured.Unstructured, concurrent int) error {
	return parallel(ctx, len(apps), concurrent, func(i int) error {
		for _, obj := range apps[i] {
			//nolint:staticcheck // client.Apply with an unstructured object is the server-side apply of the object
			if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(floorFieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
		return nil
	})
}

// watchDeploymentsCurrent watches the Deployments of namespace ns and
// sends nil once n of them are Current (kstatus), or the error that ended
// the watch.
func watchDeploymentsCurrent(ctx context.Context, c client.WithWatch, ns string, n int) (<-chan error, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apps/v1")
	list.SetKind("DeploymentList")
	w, err := c.Watch(ctx, list, client.InNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("watching the Deployments: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		current := map[string]bool{}
		for {
			select {
			case <-ctx.Done():
				done <- fmt.Errorf("%d of %d Deployments Current: %w", len(current), n, ctx.Err())
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					done <- fmt.Errorf("the watch of Deployments ended with %d of %d Current", len(current), n)
					return
				}
				obj, isObj := ev.Object.(*unstructured.Unstructured)
				if !isObj || (ev.Type != watch.Added && ev.Type != watch.Modified) {
					continue
				}
				if st, err := kstatus.Compute(obj); err == nil && st.Status == kstatus.CurrentStatus {
					current[obj.GetName()] = true
				} else {
					delete(current, obj.GetName())
				}
				if len(current) >= n {
					done <- nil
					return
				}
			}
		}
	}()
	return done, nil
}
