package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/gitserver"
	"github.com/windlass-dev/windlass/internal/testutil"
)

// The fleet repository of an -image run and its credentials: the git
// server refuses anonymous pushes.
const (
	fleetName    = "fleet"
	fleetSecret  = "fleet-auth"
	fleetGitUser = "bench"
	fleetGitPass = "bench-pushes"
)

// Labels of the registry requests counted by the image kit.
const (
	// tagLists counts GET /v2/<name>/tags/list, every page.
	tagLists = "tag_lists"
	// scanPasses counts the first pages of the tag lists (no "last"
	// parameter): one per scan of a repository.
	scanPasses = "scan_passes"
	// registryOther counts every other request (pings, HEADs, the set-up's
	// pushes).
	registryOther = "registry_other"
)

// Labels of the git requests counted by the image kit's proxy.
const (
	// refListings counts GET <repo>/info/refs?service=git-upload-pack:
	// an ls-remote, and the start of every clone or fetch.
	refListings = "ref_listings"
	// pushAttempts counts GET <repo>/info/refs?service=git-receive-pack:
	// every push starts with it, those that lose a race included (the
	// client finds the non-fast-forward in the advertisement).
	pushAttempts = "push_attempts"
	// pushes counts POST <repo>/git-receive-pack: the pushes sent.
	pushes = "pushes"
)

// imageKit is the world of an -image run: an in-process OCI registry with
// n repositories app-i of tags tags each (one random image tagged many
// times), and a git server (git-http-backend, with basic auth, so that
// pushes are accepted) holding one repository, fleet.git, whose
// apps/app-i/deploy.yaml names the image of app-i with a setter marker of
// its policy. It counts the registry's requests (see classifyImageRequest)
// and the git server's (see classifyGitRequest).
type imageKit struct {
	reg  *http.Server
	host string
	// inner is the registry without the counting and paging wrappers:
	// the set-up tags through it, in process.
	inner http.Handler
	// manifest and mediaType are each repository's image manifest, which
	// every tag of it points at.
	manifest  map[string][]byte
	mediaType map[string]string

	git   *gitserver.Server
	proxy *countingProxy
	repo  *gitserver.Repo

	n, tags int
	// setup is how long filling the registry took.
	setup time.Duration

	mu     sync.Mutex
	counts map[string]int64
}

// startImageKit starts the registry and fills it, and starts the git
// server over folder dir with an empty fleet.git (see Prepare).
func startImageKit(ctx context.Context, cfg Config, dir string) (_ *imageKit, err error) {
	k := &imageKit{n: cfg.N, tags: cfg.ImageTags, manifest: map[string][]byte{}, mediaType: map[string]string{},
		counts: map[string]int64{tagLists: 0, scanPasses: 0, registryOther: 0, manifestGets: 0, blobGets: 0}}
	defer func() {
		if err != nil {
			k.Close()
		}
	}()
	if err := k.startRegistry(); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := parallel(ctx, k.n, 8, func(i int) error { return k.fill(ctx, i) }); err != nil {
		return nil, fmt.Errorf("filling the registry: %w", err)
	}
	k.setup = time.Since(start)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if k.git, err = gitserver.New(dir); err != nil {
		return nil, err
	}
	k.git.SetBasicAuth(fleetGitUser, fleetGitPass)
	gitURL, err := k.git.StartHTTP()
	if err != nil {
		return nil, err
	}
	if k.proxy, err = startCountingProxy(gitURL, classifyGitRequest, gitFetches, refListings, pushAttempts, pushes); err != nil {
		return nil, err
	}
	k.repo, err = k.git.InitRepo(fleetName+".git", branch)
	return k, err
}

// startRegistry serves the registry on a free loopback port, its tag
// lists paged as the distribution spec says (a Link header to the next
// page), every request counted.
func (k *imageKit) startRegistry() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	k.host = ln.Addr().String()
	k.inner = testutil.NewRegistryHandler()
	paged := testutil.PaginateTags(k.inner)
	k.reg = &http.Server{
		ReadHeaderTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k.count(r)
			paged.ServeHTTP(w, r)
		}),
	}
	go func() { _ = k.reg.Serve(ln) }()
	return nil
}

// imageTag is the j-th tag of every repository: 1.0.j.
func imageTag(j int) string { return "1.0." + strconv.Itoa(j) }

// changeTag is the tag the change phase pushes: higher than every other.
const changeTag = "1.1.0"

// fill pushes a small random image to app-i as imageTag(0), over HTTP,
// then tags it imageTag(1) … imageTag(tags-1) by putting its manifest
// again, in process: the registry stores a tag as a copy of the manifest,
// so this is what a push of the same image under many tags leaves.
func (k *imageKit) fill(ctx context.Context, i int) error {
	img, err := random.Image(512, 1)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(k.host+"/"+appName(i)+":"+imageTag(0), name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.manifest[appName(i)], k.mediaType[appName(i)] = raw, string(mt)
	k.mu.Unlock()
	for j := 1; j < k.tags; j++ {
		if err := k.putTag(ctx, i, imageTag(j)); err != nil {
			return err
		}
	}
	return nil
}

// putTag points tag of app-i at its image, in process (not counted).
func (k *imageKit) putTag(ctx context.Context, i int, tag string) error {
	k.mu.Lock()
	raw, mt := k.manifest[appName(i)], k.mediaType[appName(i)]
	k.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "/v2/"+appName(i)+"/manifests/"+tag, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mt)
	w := &statusRecorder{header: http.Header{}}
	k.inner.ServeHTTP(w, req)
	if w.status != http.StatusCreated {
		return fmt.Errorf("tagging %s:%s: %d", appName(i), tag, w.status)
	}
	return nil
}

// statusRecorder is an http.ResponseWriter that keeps the status only.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.header }

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return len(p), nil
}

func (s *statusRecorder) WriteHeader(status int) { s.status = status }

// count records a registry request.
func (k *imageKit) count(r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, what := range classifyImageRequest(r) {
		k.counts[what]++
	}
}

// classifyImageRequest names what a registry request counts as: a tag
// list page (and a scan pass when it is a first page), a manifest or a
// blob download, or another request.
func classifyImageRequest(r *http.Request) []string {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tags/list") {
		if r.URL.Query().Get("last") == "" {
			return []string{tagLists, scanPasses}
		}
		return []string{tagLists}
	}
	if what := classifyRegistryGet(r); what != "" {
		return []string{what}
	}
	return []string{registryOther}
}

// classifyGitRequest names a smart-HTTP request to the git server: a
// fetch (POST git-upload-pack), a reference listing, a push attempt (the
// receive-pack advertisement) or a push (POST git-receive-pack).
func classifyGitRequest(r *http.Request) string {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/git-upload-pack"):
		return gitFetches
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/git-receive-pack"):
		return pushes
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/info/refs"):
		switch r.URL.Query().Get("service") {
		case "git-upload-pack":
			return refListings
		case "git-receive-pack":
			return pushAttempts
		}
	}
	return ""
}

// Kind implements sourceKit: the one source of the automations.
func (k *imageKit) Kind() string { return sourcev1.GitRepositoryKind }

// NewObject implements sourceKit.
func (k *imageKit) NewObject() client.Object { return &sourcev1.GitRepository{} }

// NewList implements sourceKit.
func (k *imageKit) NewList() client.ObjectList { return &sourcev1.GitRepositoryList{} }

// Prepare implements sourceKit: the Secret with the git credentials, and
// the first commit of fleet.git, whose markers name the policies of
// namespace ns.
func (k *imageKit) Prepare(ctx context.Context, c client.Client, ns string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fleetSecret},
		Data: map[string][]byte{"username": []byte(fleetGitUser), "password": []byte(fleetGitPass)}}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating the git Secret: %w", err)
	}
	files := make(map[string]string, k.n)
	for i := range k.n {
		files[imageAppPath(i)+"/deploy.yaml"] = deployManifest(ns, k.host, i, imageTag(0))
	}
	_, err := k.repo.Commit(branch, files, "initial")
	return err
}

// imageAppPath is the folder of application i in fleet.git.
func imageAppPath(i int) string { return "apps/" + appName(i) }

// deployManifest is application i's Deployment at tag, its image marked
// with the setter of the policy ns:app-i.
func deployManifest(ns, host string, i int, tag string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 0
  template:
    spec:
      containers:
        - name: app
          image: %[2]s/%[1]s:%[3]s # {"$imagepolicy": "%[4]s:%[1]s"}
`, appName(i), host, tag, ns)
}

// Sources implements sourceKit: the GitRepository of fleet.git, with the
// credentials, on main.
func (k *imageKit) Sources(ns string) []client.Object {
	repo := gitRepository(ns, fleetName, k.proxy.URL+"/"+fleetName+".git")
	repo.Spec.SecretRef = &meta.LocalObjectReference{Name: fleetSecret}
	return []client.Object{repo}
}

// SourceName implements sourceKit.
func (k *imageKit) SourceName(int) string { return fleetName }

// AppPath implements sourceKit.
func (k *imageKit) AppPath(i int) string { return imageAppPath(i) }

// Heads implements sourceKit: the head of main of fleet.git.
func (k *imageKit) Heads() (map[string]string, error) {
	head, err := k.repo.Head(branch)
	return map[string]string{fleetName: head}, err
}

// Change implements sourceKit: changeTag pushed to app-0. The -image
// phases change several repositories with pushChangeTag; the automation,
// not the benchmark, moves the git head that Change returns.
func (k *imageKit) Change(ctx context.Context) (string, error) {
	if err := k.pushChangeTag(ctx, 0); err != nil {
		return "", err
	}
	return k.repo.Head(branch)
}

// pushChangeTag tags app-i's image changeTag.
func (k *imageKit) pushChangeTag(ctx context.Context, i int) error {
	return k.putTag(ctx, i, changeTag)
}

// commits returns the number of commits on main of fleet.git.
func (k *imageKit) commits() (int, error) {
	out, err := k.git.GitCommand(k.repo.Path(), "rev-list", "--count", branch).Output()
	if err != nil {
		return 0, fmt.Errorf("counting the commits of %s: %w", fleetName, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
}

// Downloads implements sourceKit: the registry's requests and the git
// server's, by label.
func (k *imageKit) Downloads() map[string]int64 {
	k.mu.Lock()
	out := maps.Clone(k.counts)
	k.mu.Unlock()
	maps.Copy(out, k.proxy.Counts())
	return out
}

// Server implements sourceKit.
func (k *imageKit) Server() string {
	return fmt.Sprintf("in-process OCI registry at %s (%d repositories × %d tags), git (%s, basic auth)",
		k.host, k.n, k.tags, GitServerHTTPBackend)
}

// Close implements sourceKit.
func (k *imageKit) Close() {
	if k.reg != nil {
		_ = k.reg.Close()
	}
	if k.proxy != nil {
		k.proxy.Close()
	}
	if k.git != nil {
		k.git.Stop()
	}
}

// imageAppLabel labels application i's ImagePolicy app-i, so that its
// automation selects it alone.
const imageAppLabel = "bench.windlass.dev/app"

// imageObjects returns the objects of application i in namespace ns: its
// ImageRepository, its ImagePolicy (semver, every tag of the kit) and its
// ImageUpdateAutomation (./apps/app-i of fleet.git, pushed to main).
func (k *imageKit) imageObjects(ns string, i int, interval, automationInterval time.Duration) (
	*imagev1.ImageRepository, *imagev1.ImagePolicy, *imagev1.ImageUpdateAutomation) {
	app := appName(i)
	repo := &imagev1.ImageRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: imagev1.ImageRepositorySpec{Image: k.host + "/" + app, Insecure: true,
			Interval: metav1.Duration{Duration: interval}},
	}
	policy := &imagev1.ImagePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app, Labels: map[string]string{imageAppLabel: app}},
		Spec: imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: app},
			Policy: imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0"}}},
	}
	automation := &imagev1.ImageUpdateAutomation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: imagev1.ImageUpdateAutomationSpec{
			SourceRef: imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: fleetName},
			Interval:  metav1.Duration{Duration: automationInterval},
			GitSpec: &imagev1.GitSpec{Commit: imagev1.CommitSpec{
				Author: imagev1.CommitUser{Name: "Windlass Bench", Email: "bench@windlass.invalid"}}},
			PolicySelector: &metav1.LabelSelector{MatchLabels: map[string]string{imageAppLabel: app}},
			Update:         &imagev1.UpdateStrategy{Strategy: imagev1.UpdateStrategySetters, Path: "./" + imageAppPath(i)},
		},
	}
	return repo, policy, automation
}
