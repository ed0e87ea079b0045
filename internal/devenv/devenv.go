// Package devenv runs `windlass dev`: a local control plane (etcd,
// kube-apiserver and kube-controller-manager, built from Go modules on first
// use), every Windlass controller in this process, a git server on loopback
// serving a demo repository or the user's folder, and the GitRepository and
// Kustomizations that deploy it. Everything listens on 127.0.0.1 only, and
// everything stops when the context ends.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/windlass-dev/windlass/config/crd"
	"github.com/windlass-dev/windlass/internal/controlplane"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/scheme"
	"github.com/windlass-dev/windlass/internal/workdir"
)

// Options configure a dev session.
type Options struct {
	// Out receives the progress and the summary.
	Out io.Writer
	// Terminal redraws progress lines in place; otherwise each is a line.
	Terminal bool
	// KubeconfigOut is where the administrator's kubeconfig is written
	// (default: kubeconfig in the dev folder of the cache).
	KubeconfigOut string
	// Path is the user's folder to serve; empty serves the demo.
	Path string
	// Timeout bounds the wait for the objects to become Ready.
	Timeout time.Duration
	// SyncInterval is how often Path is checked for changes.
	SyncInterval time.Duration
	// Split, with Path, decomposes it: one artifact (of an
	// ArtifactGenerator) and one Kustomization per folder this pattern
	// (like apps/{app}) matches.
	Split string
	// Command is how the user runs windlass, for the hints printed.
	Command string
	// Version is the version of windlass, recorded for the command line.
	Version string
}

// ErrNoGit says that git is needed to serve the repository.
var ErrNoGit = errors.New("windlass dev needs git on the PATH to serve its repository: install git (https://git-scm.com/downloads)")

// Run runs a dev session until ctx ends, then stops everything it started.
func Run(ctx context.Context, o Options) (err error) {
	cache, err := controlplane.CacheDir()
	if err != nil {
		return err
	}
	s := &session{opts: o, dir: devDir(cache), p: newPrinter(o.Out, o.Terminal)}
	if s.opts.KubeconfigOut == "" {
		s.opts.KubeconfigOut = filepath.Join(s.dir, "kubeconfig")
	}
	if s.opts.KubeconfigOut, err = filepath.Abs(s.opts.KubeconfigOut); err != nil {
		return err
	}
	if err := s.checkPath(); err != nil {
		return err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return ErrNoGit
	}
	s.record = Record{PID: os.Getpid(), Kubeconfig: s.opts.KubeconfigOut, Log: filepath.Join(s.dir, "windlass.log"), Version: o.Version}
	l, previous, err := acquireLock(s.dir, s.record)
	if err != nil {
		return err
	}
	s.lock = l
	defer l.release()
	s.stopLeftovers(previous)
	if err := s.openLog(); err != nil {
		return err
	}
	restore, err := s.useRunDir()
	if err != nil {
		return err
	}
	defer restore()
	defer s.stop()
	s.p.line("windlass dev: kubeconfig %s", s.opts.KubeconfigOut)
	for _, step := range []func(context.Context) error{
		s.buildControlPlane, s.startControlPlane, s.startControllers, s.serveRepository, s.applySync,
	} {
		if err := step(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // interrupted: stopping is all that is left
			}
			return err
		}
	}
	s.waitReady(ctx)
	if ctx.Err() != nil {
		return nil
	}
	s.printHowToLook()
	if s.split != nil {
		s.seedSplit(ctx)
	}
	if s.mirror != nil {
		s.followFolder(ctx)
	}
	<-ctx.Done()
	return nil
}

// session is what a dev run started, to stop it in reverse order.
type session struct {
	opts Options
	// dir is the dev folder of the cache: lock, logs, storage.
	dir string
	p   *printer

	// lock is held while the session runs; record is what it says.
	lock   *lock
	record Record
	// logger writes the controllers' log, windlass.log, once opened.
	logger logr.Logger

	env     *envtest.Environment
	config  *rest.Config
	client  client.Client
	kcm     *controlplane.ControllerManager
	stopMgr func()
	// webhookAddr is where the Receivers' webhooks are served,
	// http://127.0.0.1:port.
	webhookAddr string
	// tagsAddr is where the ImageRepositories' tags are served,
	// http://127.0.0.1:port.
	tagsAddr string
	// uiURL is the web UI's overview, http://127.0.0.1:port/.
	uiURL      string
	gitServer  *gitserver.Server
	repo       *gitserver.Repo
	mirror     *folderMirror
	split      *splitter
	syncObjs   []client.Object
	logFiles   []*os.File
	kubeconfig bool
}

// runDir holds the files of one run, removed when it stops.
func (s *session) runDir() string { return filepath.Join(s.dir, "run") }

// useRunDir makes an empty run folder and points $TMPDIR into it, so that
// every temporary file of the run (the test framework's, the git
// server's, the controllers'), and of the processes it starts, goes with
// it. It returns the function that points $TMPDIR back.
func (s *session) useRunDir() (restore func(), err error) {
	if err := os.RemoveAll(s.runDir()); err != nil {
		return nil, err
	}
	tmp := filepath.Join(s.runDir(), "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	old, had := os.LookupEnv("TMPDIR")
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		return nil, err
	}
	return func() {
		if had {
			_ = os.Setenv("TMPDIR", old)
		} else {
			_ = os.Unsetenv("TMPDIR")
		}
	}, nil
}

// checkPath fails early on a --path that cannot be served, or a --split
// that cannot split it.
func (s *session) checkPath() error {
	if s.opts.Path == "" {
		if s.opts.Split != "" {
			return errors.New("--split needs --path: the folder to decompose")
		}
		return nil
	}
	abs, err := filepath.Abs(s.opts.Path)
	if err != nil {
		return err
	}
	info, err := os.Stat(abs)
	if err != nil || !info.IsDir() {
		return fmt.Errorf("--path %s is not a folder: point it at the folder of your manifests", s.opts.Path)
	}
	s.opts.Path = abs
	if _, err = newFolderMirror(abs, nil).stamp(); err != nil || s.opts.Split == "" {
		return err
	}
	if s.split, err = newSplitter(s.opts.Split, abs); err != nil {
		return err
	}
	_, err = s.split.names()
	return err
}

// buildControlPlane builds the control plane when it is not built yet.
func (s *session) buildControlPlane(ctx context.Context) error {
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return err
	}
	if missing := controlplane.Missing(assets); len(missing) > 0 {
		s.p.line("The control plane is built once from Go modules into %s; later runs start in seconds.", assets)
		return controlplane.Build(ctx, assets, s.p.buildProgress())
	}
	return nil
}

// startControlPlane starts etcd and kube-apiserver with the CRDs
// installed, writes the kubeconfig, and starts kube-controller-manager.
func (s *session) startControlPlane(ctx context.Context) error {
	done := s.p.phase("starting the control plane")
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return done(err)
	}
	crds, err := crd.Objects()
	if err != nil {
		return done(err)
	}
	if err := s.newEnvironment(assets, crds); err != nil {
		return done(err)
	}
	s.config, err = s.env.Start()
	s.recordChildren(assets)
	if err != nil {
		return done(fmt.Errorf("starting etcd and kube-apiserver from %s: %w", assets, err))
	}
	if s.client, err = client.New(s.config, client.Options{Scheme: s.env.Scheme}); err != nil {
		return done(err)
	}
	if err := s.writeKubeconfig("windlass-dev", s.opts.KubeconfigOut); err != nil {
		return done(err)
	}
	s.kubeconfig = true
	kcmConfig := filepath.Join(s.runDir(), "kube-controller-manager.kubeconfig")
	if err := s.writeKubeconfig("kube-controller-manager", kcmConfig); err != nil {
		return done(err)
	}
	log, err := s.logFile("kube-controller-manager.log")
	if err != nil {
		return done(err)
	}
	s.kcm, err = controlplane.StartControllerManager(ctx, controlplane.ControllerManagerOptions{
		Binary: filepath.Join(assets, "kube-controller-manager"), Kubeconfig: kcmConfig, Output: log, Client: s.client,
	})
	s.recordChildren(assets)
	if err != nil {
		return done(fmt.Errorf("%w (its log: %s)", err, log.Name()))
	}
	return done(nil, "kube-apiserver at %s", s.config.Host)
}

// newEnvironment prepares etcd and kube-apiserver, started through
// launchers that have them killed should windlass dev die, with etcd's
// data and the API server's certificates and keys in the run folder, so
// that they go with it.
func (s *session) newEnvironment(assets string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	etcdData, certs := filepath.Join(s.runDir(), "etcd"), filepath.Join(s.runDir(), "certs")
	for _, dir := range []string{etcdData, certs} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	programs, err := launchers(filepath.Join(s.runDir(), "bin"), assets)
	if err != nil {
		return fmt.Errorf("preparing the control plane's launchers: %w", err)
	}
	s.env = &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds, Scheme: scheme.New()}
	s.env.ControlPlane.Etcd = &envtest.Etcd{DataDir: etcdData, Path: programs["etcd"]}
	api := s.env.ControlPlane.GetAPIServer()
	api.Path = programs["kube-apiserver"]
	api.CertDir = certs
	api.Configure().Set("service-cluster-ip-range", "10.96.0.0/12")
	return nil
}

// recordChildren writes the control-plane processes running now into the
// lock, for the next run to stop should this one die without stopping
// them.
func (s *session) recordChildren(assets string) {
	if s.lock == nil {
		return
	}
	s.record.Children = controlPlaneChildren(assets)
	s.lock.write(s.record)
}

// writeKubeconfig issues the system:masters user name and writes its
// kubeconfig, with a context named windlass-dev, to path.
func (s *session) writeKubeconfig(name, path string) error {
	user, err := s.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding the %s user: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return err
	}
	for old, c := range cfg.Contexts {
		delete(cfg.Contexts, old)
		cfg.Contexts["windlass-dev"] = c
	}
	cfg.CurrentContext = "windlass-dev"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// logFile creates a log file in the dev folder, closed when the run stops.
func (s *session) logFile(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(s.dir, name))
	if err != nil {
		return nil, err
	}
	s.logFiles = append(s.logFiles, f)
	return f, nil
}

// openLog opens the controllers' log and sweeps, logging into it, the work
// folders that killed windlass processes left in $TMPDIR, before $TMPDIR
// points into the run folder.
func (s *session) openLog() error {
	logger, err := s.controllerLogger()
	if err != nil {
		return err
	}
	_, _ = workdir.Sweep(logger) // it logs why it could not, which stops nothing
	return nil
}

// controllerLogger writes the controllers' logs to windlass.log, in the
// JSON that `windlass controller` writes, so that `windlass logs
// --from-file` reads both alike. The log is opened once a session.
func (s *session) controllerLogger() (logr.Logger, error) {
	if s.logger.GetSink() != nil {
		return s.logger, nil
	}
	f, err := s.logFile("windlass.log")
	if err != nil {
		return logr.Logger{}, err
	}
	s.logger = zap.New(zap.WriteTo(f), zap.JSONEncoder())
	return s.logger, nil
}

// stop stops what the run started, in reverse order, and removes the
// kubeconfig of a control plane that is gone.
func (s *session) stop() {
	if s.env == nil {
		_ = os.RemoveAll(s.runDir())
		return
	}
	done := s.p.phase("stopping")
	if s.stopMgr != nil {
		s.stopMgr()
	}
	if s.gitServer != nil {
		s.gitServer.Stop()
	}
	if s.kcm != nil {
		s.kcm.Stop()
	}
	err := s.env.Stop()
	for _, f := range s.logFiles {
		_ = f.Close()
	}
	_ = os.RemoveAll(s.runDir())
	if s.kubeconfig {
		_ = os.Remove(s.opts.KubeconfigOut)
	}
	_ = done(err, "nothing left running")
}

// setLogger sends controller-runtime's own logs to the controllers' log.
func setLogger(l logr.Logger) { ctrl.SetLogger(l) }
