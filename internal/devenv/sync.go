package devenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	"github.com/windlass-dev/windlass/internal/conditions"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/manager"
)

// startControllers runs every Windlass controller in this process against
// the control plane: the artifacts, the Receivers' webhooks and the image
// tags served on loopback ports of their own, the artifacts and the tags
// stored under the run folder.
func (s *session) startControllers(ctx context.Context) error {
	done := s.p.phase("starting the controllers")
	logger, err := s.controllerLogger()
	if err != nil {
		return done(err)
	}
	addrs, err := newLoopbackAddrs()
	if err != nil {
		return done(err)
	}
	opts := s.managerOptions(addrs)
	setLogger(manager.WithUILogs(logger, &opts))
	// The manager gets its own context, so that stop ends it before the
	// control plane rather than at the same time.
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	mgr, err := manager.New(mgrCtx, s.config, opts)
	if err != nil {
		cancel()
		return done(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- mgr.Start(mgrCtx) }()
	s.stopMgr = func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
		}
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return done(fmt.Errorf("the controllers' cache did not sync (see %s)", filepath.Join(s.dir, "windlass.log")))
	}
	s.webhookAddr, s.tagsAddr, s.uiURL = "http://"+addrs.webhooks, "http://"+addrs.tags, "http://"+addrs.ui+"/"
	return done(nil, "artifacts served at http://%s, Receivers' webhooks at %s, image tags at %s; logs in %s",
		addrs.artifacts, s.webhookAddr, s.tagsAddr, filepath.Join(s.dir, "windlass.log"))
}

// loopbackAddrs are the addresses the controllers serve on, on 127.0.0.1.
type loopbackAddrs struct {
	// artifacts serves the source controller's artifacts.
	artifacts string
	// webhooks serves the Receivers' webhooks.
	webhooks string
	// tags serves the scanned tags of the ImageRepositories.
	tags string
	// ui serves the web UI.
	ui string
}

// newLoopbackAddrs picks a free loopback port for each address.
func newLoopbackAddrs() (loopbackAddrs, error) {
	var a loopbackAddrs
	for _, addr := range []*string{&a.artifacts, &a.webhooks, &a.tags, &a.ui} {
		var err error
		if *addr, err = freeLoopbackAddr(); err != nil {
			return a, err
		}
	}
	return a, nil
}

// storageDir is where the controllers keep their files: the artifacts,
// and the image tags in its images folder.
func (s *session) storageDir() string { return filepath.Join(s.runDir(), "storage") }

// managerOptions are the options of the dev session's manager: every
// controller, serving on addrs only, storing under storageDir, with no
// metrics or health server.
func (s *session) managerOptions(addrs loopbackAddrs) manager.Options {
	opts := manager.DefaultOptions()
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	opts.Namespace = Namespace
	opts.RequeueDependency = 2 * time.Second
	opts.Source.StoragePath = s.storageDir()
	opts.Source.StorageAddr = addrs.artifacts
	opts.Notification.ReceiverAddr = addrs.webhooks
	opts.AllowLoopback = true // the demo's servers listen on loopback
	// The image reflector stores its tags under the storage path too.
	opts.Image.TagsAddr = addrs.tags
	// On loopback, to its one user, without a token (the banner's curl).
	opts.Image.InsecureTags = true
	opts.UIAddr = addrs.ui
	opts.UIActions = true // its one user is the cluster's administrator
	return opts
}

// freeLoopbackAddr returns an address on 127.0.0.1 with a port free now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// serveRepository serves the dev repository over HTTP on loopback, with
// the demo or the user's folder committed.
func (s *session) serveRepository(context.Context) error {
	done := s.p.phase("serving the git repository")
	srv, err := gitserver.New(filepath.Join(s.runDir(), "git"))
	if err != nil {
		return done(err)
	}
	s.gitServer = srv
	base, err := srv.StartHTTP()
	if err != nil {
		return done(err)
	}
	if s.repo, err = srv.InitRepo(repoName+".git", branch); err != nil {
		return done(err)
	}
	what, sha := "the demo", ""
	if s.opts.Path != "" {
		what = s.opts.Path
		s.mirror = newFolderMirror(s.opts.Path, s.repo)
		sha, err = s.mirror.sync()
	} else {
		sha, err = s.repo.Commit(branch, demoFiles, "The windlass dev demo")
	}
	if err != nil {
		return done(err)
	}
	url := base + "/" + repoName + ".git"
	s.syncObjs = syncObjects(url, s.opts.Path == "")
	if s.split != nil {
		kss, err := s.split.kustomizations()
		if err != nil {
			return done(err)
		}
		s.syncObjs = append([]client.Object{s.syncObjs[0], s.split.generator}, kss...)
	}
	return done(nil, "%s at %s, commit %s", what, url, short(sha))
}

// applySync creates the namespace and the objects that deploy the
// repository: the demo's Gate, the GitRepository and the Kustomizations.
func (s *session) applySync(ctx context.Context) error {
	done := s.p.phase("creating the objects that deploy it")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := s.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return done(err)
	}
	names := make([]string, 0, len(s.syncObjs))
	for _, obj := range s.syncObjs {
		if err := s.client.Create(ctx, obj.DeepCopyObject().(client.Object)); err != nil {
			return done(fmt.Errorf("creating %s: %w", describe(obj), err))
		}
		names = append(names, describe(obj))
	}
	return done(nil, "%s", strings.Join(names, ", "))
}

// waitReady waits until every sync object is Ready, saying so of each, or
// until the timeout, saying why those left are not.
func (s *session) waitReady(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	done := s.p.phase("waiting until they are Ready")
	pending := slices.Clone(s.syncObjs)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			for _, obj := range pending {
				s.p.line("✗ %s is not Ready: %s", describe(obj), s.readyMessage(obj))
			}
			_ = done(fmt.Errorf("not Ready after %s; they keep being retried (see %s get all)", s.opts.Timeout, s.opts.Command))
			return
		case <-tick.C:
		}
		pending = slices.DeleteFunc(pending, func(obj client.Object) bool {
			ready, message := s.ready(ctx, obj)
			if ready {
				s.p.line("✔ %s: %s", describe(obj), message)
			}
			return ready
		})
	}
	_ = done(nil, "")
}

// statusObject is a sync object's status as waitReady reads it.
type statusObject interface {
	client.Object
	conditions.Getter
	GetObservedGeneration() int64
}

// ready reads obj and returns whether it is Ready at its generation, and
// its Ready message.
func (s *session) ready(ctx context.Context, obj client.Object) (bool, string) {
	got := obj.DeepCopyObject().(statusObject)
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		return false, err.Error()
	}
	c := conditions.Get(got, meta.ReadyCondition)
	if c == nil {
		return false, "not reconciled yet"
	}
	return c.Status == metav1.ConditionTrue && got.GetObservedGeneration() == got.GetGeneration(), c.Message
}

// readyMessage returns the Ready message of obj now.
func (s *session) readyMessage(obj client.Object) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, message := s.ready(ctx, obj)
	return message
}

// printHowToLook says how to look at what runs.
func (s *session) printHowToLook() {
	cmd := s.opts.Command
	s.p.line("")
	s.p.line("Windlass dev is running. Open the web UI: %s", s.uiURL)
	s.p.line("In another terminal:")
	s.p.line("  export KUBECONFIG=%s", s.opts.KubeconfigOut)
	s.p.line("  %s get all                # the sources and Kustomizations", cmd)
	if s.mirror == nil {
		s.p.line("  kubectl get deployments,configmaps -n demo")
		s.p.line("  %s reconcile ks demo-app --with-source", cmd)
		s.p.line("  %s gate close %s       # demo-app then waits for approval", cmd, demoGate)
	} else if s.split != nil {
		s.p.line("  %s tree artifactgenerator %s       # each folder's artifact, its Kustomization, what it applied", cmd, repoName)
		s.p.line("Edit the files under %s: each change is committed, and only the Kustomizations of the folders it changed apply it.", s.opts.Path)
	} else {
		s.p.line("  %s reconcile ks %s --with-source", cmd, repoName)
		s.p.line("Edit the files under %s: each change is committed and applied within seconds.", s.opts.Path)
	}
	s.p.line("  curl %s/images/NAMESPACE/NAME/tags   # the tags an ImageRepository scanned", s.tagsAddr)
	s.p.line("Logs: %s (controllers), %s", filepath.Join(s.dir, "windlass.log"), filepath.Join(s.dir, "kube-controller-manager.log"))
	s.p.line("Press Ctrl-C to stop everything.")
}

// followFolder commits the user's folder whenever it changes and asks for
// the GitRepository to be reconciled at once; reportApplies says how each
// commit's apply went, while the edits that follow are committed.
func (s *session) followFolder(ctx context.Context) {
	tick := time.NewTicker(s.opts.SyncInterval)
	defer tick.Stop()
	// commits holds the latest commit whose outcome is not said yet: a
	// newer one replaces it.
	commits := make(chan string, 1)
	if s.split != nil {
		go s.reportSplitApplies(ctx)
	} else {
		go s.reportApplies(ctx, commits)
	}
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sha, err := s.mirror.sync()
		if err != nil {
			if err.Error() != lastErr {
				s.p.line("✗ %v", err)
			}
			lastErr = err.Error()
			continue
		}
		lastErr = ""
		if sha == "" {
			continue
		}
		s.p.line("▸ committed the change in %s as %s@sha1:%s", s.opts.Path, branch, short(sha))
		if err := s.client.Patch(ctx, s.syncObjs[0].DeepCopyObject().(client.Object), requestReconcile()); err != nil {
			s.p.line("✗ asking for a reconciliation: %v", err)
		}
		if s.split != nil {
			if err := s.syncSplit(ctx); err != nil {
				s.p.line("✗ %v", err)
			}
			continue
		}
		select {
		case <-commits:
		default:
		}
		commits <- sha
	}
}

// reportApplies says, for the latest commit received, whether the dev
// Kustomization applied it, as soon as it is decided, or that it has not
// attempted it after the timeout.
func (s *session) reportApplies(ctx context.Context, commits <-chan string) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	key := client.ObjectKeyFromObject(s.syncObjs[1])
	sha, deadline := "", time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case sha = <-commits:
			deadline = time.Now().Add(s.opts.Timeout)
		case <-tick.C:
		}
		if sha == "" {
			continue
		}
		var ks kustomizev1.Kustomization
		if err := s.client.Get(ctx, key, &ks); err != nil {
			continue
		}
		switch outcome, message := applyOutcome(&ks, sha); {
		case outcome == applied:
			s.p.line("✔ applied %s", ks.Status.LastAppliedRevision)
		case outcome == failed:
			s.p.line("✗ did not apply %s@sha1:%s: %s", branch, short(sha), message)
		case time.Now().After(deadline):
			s.p.line("✗ %s has not attempted %s@sha1:%s after %s: %s", describe(s.syncObjs[1]), branch, short(sha), s.opts.Timeout, message)
		default:
			continue
		}
		sha = ""
	}
}

// outcome is how a Kustomization's run of a commit ended, if it did.
type outcome int

const (
	// undecided: the run of the commit has not ended yet, or waits for
	// something else (a source's artifact, a dependency).
	undecided outcome = iota
	// applied: the commit is applied and Ready.
	applied
	// failed: the run of the commit failed; it is retried later.
	failed
)

// applyOutcome returns how the Kustomization's run of commit sha ended,
// and its Ready message. A run failed when the commit was attempted and
// Ready is False for the current generation while nothing is under way,
// or only a retry is (Reconciling with reason ProgressingWithRetry); a
// Kustomization that waits for something else (Reconciling with that
// reason) is still going.
func applyOutcome(ks *kustomizev1.Kustomization, sha string) (outcome, string) {
	ready := conditions.Get(ks, meta.ReadyCondition)
	if ready == nil {
		return undecided, "not reconciled yet"
	}
	if ks.Status.ObservedGeneration != ks.Generation || !strings.HasSuffix(ks.Status.LastAttemptedRevision, sha) {
		return undecided, ready.Message
	}
	reconciling := conditions.Get(ks, meta.ReconcilingCondition)
	settled := reconciling == nil || reconciling.Status != metav1.ConditionTrue
	switch {
	case ready.Status == metav1.ConditionTrue && settled && strings.HasSuffix(ks.Status.LastAppliedRevision, sha):
		return applied, ready.Message
	case ready.Status == metav1.ConditionFalse && (settled || reconciling.Reason == meta.ProgressingWithRetryReason):
		return failed, ready.Message
	}
	return undecided, ready.Message
}

// short returns the first 12 characters of a commit hash.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
