package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	"github.com/windlass-dev/windlass/internal/fetch"
	"github.com/windlass-dev/windlass/internal/helm/chart"
	"github.com/windlass-dev/windlass/internal/helm/repository"
	"github.com/windlass-dev/windlass/internal/httptransport"
	"github.com/windlass-dev/windlass/internal/netguard"
	"github.com/windlass-dev/windlass/internal/oci"
	"github.com/windlass-dev/windlass/internal/redact"
)

// fromSourceArtifact gets the extracted tree of the artifact of obj's
// GitRepository or Bucket, unless the stored artifact was built from that
// revision with the current spec. A source without an artifact is waited
// for; the watch on sources reconciles obj when one comes.
func (r *HelmChartReconciler) fromSourceArtifact(ctx context.Context, obj *sourcev1.HelmChart, sc *helmChartScope) error {
	var src sourceObject = &sourcev1.GitRepository{}
	if obj.Spec.SourceRef.Kind == sourcev1.BucketKind {
		src = &sourcev1.Bucket{}
	}
	if err := r.getSource(ctx, obj, src); err != nil {
		return err
	}
	a := src.GetArtifact()
	if a == nil {
		return r.noArtifactYet(obj)
	}
	sc.sourceRevision = a.Revision
	if chartUpToDate(obj, "", a.Revision) {
		ctrl.LoggerFrom(ctx).V(1).Info("No changes since the last reconciliation",
			"sourceRevision", a.Revision)
		sc.upToDate = true
		return nil
	}
	root, release, err := r.trees.AcquireArtifact(ctx, *a, r.sourceFetcher())
	if err != nil {
		return chartPullFailed(obj, nil, fmt.Errorf("extracting the artifact of %s '%s' (revision '%s'): %w",
			obj.Spec.SourceRef.Kind, obj.Spec.SourceRef.Name, a.Revision, err))
	}
	sc.root, sc.release = root, release
	return nil
}

// buildFromTree loads the chart folder spec.chart of the source tree
// (confined to the tree, within the limits), resolves its dependencies,
// merges the values files and packages it with its version, plus the
// source revision under the Revision strategy.
func (r *HelmChartReconciler) buildFromTree(ctx context.Context, obj *sourcev1.HelmChart, sc *helmChartScope) error {
	spec := obj.Spec
	ch, err := chart.LoadDir(sc.root, spec.Chart, r.ChartLimits)
	if err != nil {
		return fmt.Errorf("loading chart: %w", err)
	}
	if err := chart.ResolveDependencies(ctx, sc.root, spec.Chart, ch, r.ChartLimits, r.dependencyFetcher(obj)); err != nil {
		return fmt.Errorf("resolving the dependencies of chart '%s': %w", ch.Name(), err)
	}
	values, err := chart.MergeValuesFiles(sc.root, spec.Chart, spec.ValuesFiles, spec.IgnoreMissingValuesFiles)
	if err != nil {
		return fmt.Errorf("merging the values files of chart '%s': %w", ch.Name(), err)
	}
	version := ch.Metadata.Version
	if obj.GetReconcileStrategy() == sourcev1.ReconcileStrategyRevision {
		version = chart.RevisionVersion(version, sc.sourceRevision)
	}
	if sc.pkg, err = chart.Package(ch, version, values); err != nil {
		return fmt.Errorf("packaging chart '%s': %w", ch.Name(), err)
	}
	sc.name, sc.version, sc.packaged = ch.Name(), version, true
	return nil
}

// dependencyFetcher returns the fetcher of the remote dependencies of a
// chart folder that are not vendored in charts/: from an HTTP chart
// repository or an OCI registry, with the credentials of the HelmRepository
// of obj's namespace that has the same URL, if any (anonymously
// otherwise), within the limits. A repository that no HelmRepository
// declares is named by whoever pushes the chart, not by the namespace's
// owners: it is reached only at public addresses (undeclaredAddresses).
func (r *HelmChartReconciler) dependencyFetcher(obj *sourcev1.HelmChart) chart.Fetcher {
	return func(ctx context.Context, repoURL, name, versionRange string) ([]byte, error) {
		repo, err := r.helmRepositoryFor(ctx, obj.Namespace, repoURL)
		if err != nil {
			return nil, err
		}
		creds := helmCredentials{}
		if repo != nil {
			if creds, err = readHelmCredentials(ctx, r.Client, repo); err != nil {
				return nil, err
			}
		}
		u, err := url.Parse(repoURL)
		switch {
		case err != nil:
			return nil, fmt.Errorf("dependency %s: %w", name, errNoFetcher)
		case u.Scheme == "oci":
			data, err := r.fetchOCIDependency(ctx, repo, creds, repoURL, name, versionRange)
			return data, explainRefusedAddress(err, repo, obj.Namespace)
		case u.Scheme == "https" || (u.Scheme == "http" && r.AllowInsecureHTTP):
			data, err := r.fetchHTTPDependency(ctx, repo, creds, repoURL, name, versionRange)
			return data, explainRefusedAddress(err, repo, obj.Namespace)
		case u.Scheme == "http":
			return nil, fmt.Errorf("dependency %s: plain-HTTP repository '%s' refused (--insecure-allow-http=false)", name, redact.URL(repoURL))
		}
		return nil, fmt.Errorf("dependency %s: %w", name, errNoFetcher)
	}
}

// explainRefusedAddress says what to do about an address refused for an
// undeclared repository (repo nil): declare it.
func explainRefusedAddress(err error, repo *sourcev1.HelmRepository, ns string) error {
	if err == nil || repo != nil ||
		!(errors.Is(err, netguard.ErrPrivate) || errors.Is(err, netguard.ErrLoopback) || errors.Is(err, netguard.ErrLinkLocal)) {
		return err
	}
	return fmt.Errorf("%w (a repository that no HelmRepository in '%s' declares is reached at public addresses only: declare one with its URL)", err, ns)
}

// helmRepositoryFor returns the HelmRepository of namespace ns whose URL is
// repoURL (ignoring a final '/'), or nil.
func (r *HelmChartReconciler) helmRepositoryFor(ctx context.Context, ns, repoURL string) (*sourcev1.HelmRepository, error) {
	var list sourcev1.HelmRepositoryList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing HelmRepositories: %w", err)
	}
	want := strings.TrimSuffix(repoURL, "/")
	for i := range list.Items {
		if strings.TrimSuffix(list.Items[i].Spec.URL, "/") == want {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// fetchHTTPDependency downloads a dependency from an HTTP chart
// repository: through the index artifact of repo when it has one, else
// by fetching the index.
func (r *HelmChartReconciler) fetchHTTPDependency(ctx context.Context, repo *sourcev1.HelmRepository, creds helmCredentials,
	repoURL, name, versionRange string) ([]byte, error) {
	policy := r.undeclaredAddresses()
	opts := repository.ClientOptions{MaxIndexSize: r.MaxIndexSize, MaxChartSize: r.maxChartSize(),
		UserAgent: "windlass-source-controller", Addresses: &policy}
	if repo != nil {
		opts = helmClientOptions(repo, creds, r.MaxIndexSize, r.maxChartSize())
	}
	var idx *repository.Index
	var err error
	if a := artifactOf(repo); a != nil {
		idx, err = r.IndexCache.GetOrLoad(a.Digest, func() (*repository.Index, error) { return r.loadIndex(ctx, *a) })
	} else {
		var data []byte
		if data, err = repository.FetchIndex(ctx, repoURL, opts); err == nil {
			idx, err = repository.ParseIndexBounded(ctx, data)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("dependency %s: %w", name, err)
	}
	cv, err := idx.Get(name, versionRange)
	if err != nil {
		return nil, fmt.Errorf("dependency %s: %w", name, err)
	}
	return repository.DownloadChart(ctx, repoURL, cv, opts)
}

// fetchOCIDependency pulls a dependency from an OCI registry.
func (r *HelmChartReconciler) fetchOCIDependency(ctx context.Context, repo *sourcev1.HelmRepository, creds helmCredentials,
	repoURL, name, versionRange string) ([]byte, error) {
	// No keychain of the controller's environment: anonymous without repo.
	anonymous, _ := oci.KeychainFromDockerConfigs()
	opts := oci.Options{UserAgent: "windlass-source-controller", Keychain: anonymous}
	if repo == nil {
		guarded, err := r.undeclaredTransport(repoURL)
		if err != nil {
			return nil, fmt.Errorf("dependency %s: %w", name, err)
		}
		defer guarded.CloseIdleConnections()
		opts.Transport = guarded
	} else {
		var err error
		if opts, err = helmOCIOptions(repo, creds); err != nil {
			return nil, err
		}
		if opts.Insecure && !r.AllowInsecureHTTP {
			opts.Insecure = false
		}
		defer closeIdle(opts.Transport)
	}
	data, _, _, err := repository.PullOCIChart(ctx, repoURL, name, versionRange, opts, r.maxChartSize())
	if err != nil {
		return nil, fmt.Errorf("dependency %s: %w", name, err)
	}
	return data, nil
}

// undeclaredAddresses are the addresses a repository that no HelmRepository
// declares may be reached at: public ones, and loopback with
// AllowLoopback.
func (r *HelmChartReconciler) undeclaredAddresses() netguard.Policy {
	return netguard.Policy{AllowLoopback: r.AllowLoopback}
}

// undeclaredTransport returns the transport to the OCI registry of
// repoURL, which no HelmRepository declares: it reaches only
// undeclaredAddresses.
func (r *HelmChartReconciler) undeclaredTransport(repoURL string) (*http.Transport, error) {
	policy := r.undeclaredAddresses()
	if u, err := url.Parse(repoURL); err == nil {
		if err := policy.CheckHost(u.Hostname()); err != nil {
			return nil, fmt.Errorf("repository '%s': %w", redact.URL(repoURL), err)
		}
	}
	t := httptransport.New(nil, nil)
	t.DialContext = policy.Dialer(30 * time.Second).DialContext
	return t, nil
}

// artifactOf returns the artifact of repo, nil for none.
func artifactOf(repo *sourcev1.HelmRepository) *meta.Artifact {
	if repo == nil {
		return nil
	}
	return repo.GetArtifact()
}

// errNoFetcher is returned for a dependency repository that is neither
// http(s):// nor oci://.
var errNoFetcher = errors.New("only http://, https:// and oci:// dependency repositories are supported; repository aliases are not: vendor the dependency in charts/ or name its repository's URL")

// sourceFetcher returns how the artifacts of the charts' sources are read.
func (r *HelmChartReconciler) sourceFetcher() fetch.Patcher {
	return sourceFetcher(r.Storage, r.Remote)
}
