package manager

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	imagectrl "github.com/windlass-dev/windlass/internal/controller/image"
	"github.com/windlass-dev/windlass/internal/kubeauth"
	"github.com/windlass-dev/windlass/internal/registry"
)

// ImageOptions are the options of the image reflector and image
// automation controllers.
type ImageOptions struct {
	// TagsAddr is where the tags of the ImageRepositories are served.
	TagsAddr string
	// InsecureTags serves the tags to every caller, without a token.
	InsecureTags bool
}

func (o *ImageOptions) bindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.TagsAddr, "image-tags-addr", ":9095", "address the scanned tags of ImageRepositories are served on (GET /images/<namespace>/<name>/tags), to callers whose bearer token the API server authenticates as a user or service account that may get the ImageRepository")
	fs.BoolVar(&o.InsecureTags, "insecure-image-tags", false, "serve the scanned tags to any caller that reaches --image-tags-addr, without a token (only where no one else can reach it)")
}

// setupImageReflector sets up the ImageRepository and ImagePolicy
// reconcilers and the tags server, around one tag store under the storage
// path.
func (m *Manager) setupImageReflector(ctx context.Context, opts Options) error {
	path, err := opts.Source.storagePath()
	if err != nil {
		return err
	}
	store, err := registry.NewStore(path)
	if err != nil {
		return fmt.Errorf("opening the tag store at %s: %w", filepath.Join(path, "images"), err)
	}
	events := m.events(ImageReflectorController)
	repos := &imagectrl.ImageRepositoryReconciler{Client: m.GetClient(), Store: store, Events: events,
		JitterPercent: opts.IntervalJitterPercentage, AllowInsecureHTTP: opts.InsecureAllowHTTP,
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs}
	if err := repos.SetupWithManager(ctx, m, opts.controllerOptions()); err != nil {
		return err
	}
	policies := &imagectrl.ImagePolicyReconciler{Client: m.GetClient(), Store: store, Events: events,
		JitterPercent: opts.IntervalJitterPercentage, NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
		AllowInsecureHTTP: opts.InsecureAllowHTTP, DependencyRequeue: opts.RequeueDependency}
	if err := policies.SetupWithManager(ctx, m, opts.controllerOptions()); err != nil {
		return err
	}
	if opts.Image.TagsAddr == "" {
		return nil
	}
	return m.Add(apiServer(opts.Image.TagsAddr, m.forwardTags(imagectrl.TagsHandler(m.GetClient(), store, m.tagsGuard(opts)))))
}

// tagsGuard returns what admits the callers of the tags server: nil, every
// caller, with --insecure-image-tags.
func (m *Manager) tagsGuard(opts Options) *kubeauth.Guard {
	if opts.Image.InsecureTags {
		return nil
	}
	log := m.GetLogger().WithName("image-tags")
	return &kubeauth.Guard{Tokens: &kubeauth.TokenReviewer{Client: m.GetClient(), Log: log},
		Access: &kubeauth.AccessReviewer{Client: m.GetClient(), Log: log}}
}

// setupImageAutomation sets up the ImageUpdateAutomation reconciler.
func (m *Manager) setupImageAutomation(ctx context.Context, opts Options) error {
	r := &imagectrl.ImageUpdateAutomationReconciler{Client: m.GetClient(), Events: m.events(ImageAutomationController),
		JitterPercent: opts.IntervalJitterPercentage, NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs,
		AllowInsecureHTTP: opts.InsecureAllowHTTP, MaxCloneSize: opts.Source.GitCloneMaxSize}
	return r.SetupWithManager(ctx, m, opts.controllerOptions())
}
