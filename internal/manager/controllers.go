package manager

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	kustomizectrl "github.com/windlass-dev/windlass/internal/controller/kustomize"
	sourcectrl "github.com/windlass-dev/windlass/internal/controller/source"
	"github.com/windlass-dev/windlass/internal/event"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/impersonation"
	"github.com/windlass-dev/windlass/internal/kubeconfig"
)

// Controller names.
const (
	// SourceController reconciles the source.toolkit.fluxcd.io kinds.
	SourceController = "source"
	// KustomizeController reconciles Kustomizations.
	KustomizeController = "kustomize"
)

// controller is one controller the manager can run: adding a controller
// to Windlass is one entry in controllers.
type controller struct {
	// name is what --controllers calls it.
	name string
	// kinds returns an object of each kind it reconciles, for the
	// sharding label selector.
	kinds func() []client.Object
	// setup registers its reconcilers with the manager.
	setup func(m *Manager, ctx context.Context, opts Options) error
}

// controllers are every controller of this build, in the order they are
// set up: sources first, so that appliers in the same process read
// artifacts from storage directly.
var controllers = []controller{
	{
		name:  SourceController,
		kinds: func() []client.Object { return []client.Object{&sourcev1.GitRepository{}} },
		setup: (*Manager).setupSource,
	},
	{
		name:  KustomizeController,
		kinds: func() []client.Object { return []client.Object{&kustomizev1.Kustomization{}} },
		setup: (*Manager).setupKustomize,
	},
}

// AllControllers lists the names of every controller of this build, in
// the order they are set up.
var AllControllers = controllerNames()

func controllerNames() []string {
	names := make([]string, 0, len(controllers))
	for _, c := range controllers {
		names = append(names, c.name)
	}
	return names
}

// events returns the event recorder of the controller called name, as the
// reference names its controllers ("source-controller").
func (m *Manager) events(name string) *event.Recorder {
	return &event.Recorder{Kubernetes: m.GetEventRecorder(name + "-controller")}
}

func (m *Manager) setupSource(ctx context.Context, opts Options) error {
	if err := m.setupStorage(opts); err != nil {
		return err
	}
	r := &sourcectrl.GitRepositoryReconciler{
		Client:            m.GetClient(),
		Events:            m.events(SourceController),
		Storage:           m.Storage,
		JitterPercent:     opts.IntervalJitterPercentage,
		DependencyRequeue: opts.RequeueDependency,
		MaxCloneSize:      opts.GitCloneMaxSize,
		AllowInsecureHTTP: opts.InsecureAllowHTTP,
	}
	return r.SetupWithManager(ctx, m, opts.controllerOptions())
}

func (m *Manager) setupKustomize(ctx context.Context, opts Options) error {
	var fetcher fetch.Fetcher = fetch.NewHTTP()
	if m.Storage != nil {
		fetcher = &fetch.Local{Storage: m.Storage}
	}
	r := &kustomizectrl.KustomizationReconciler{
		Client:  m.GetClient(),
		Events:  m.events(KustomizeController),
		Fetcher: fetcher,
		Applier: &impersonation.Factory{
			Config:                m.GetConfig(),
			HTTPClient:            m.GetHTTPClient(),
			Scheme:                m.GetScheme(),
			Mapper:                m.GetRESTMapper(),
			DefaultServiceAccount: opts.DefaultServiceAccount,
			KubeConfigPolicy: kubeconfig.Policy{
				AllowExec: opts.InsecureKubeconfigExec, AllowInsecureTLS: opts.InsecureKubeconfigTLS,
			},
		},
		JitterPercent:        opts.IntervalJitterPercentage,
		DependencyRequeue:    opts.RequeueDependency,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
		NoRemoteBases:        opts.NoRemoteBases,
	}
	if m.Storage != nil {
		r.Changes = m.Storage
	}
	return r.SetupWithManager(ctx, m, opts.controllerOptions())
}
