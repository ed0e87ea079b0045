package kinds

import (
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Info is what an object is at and where it takes it from, in the words of
// the metrics (gotk_resource_info's revision, source_name and url labels).
type Info struct {
	// Revision is the revision the object is at: a source's artifact, the
	// revision a Kustomization applied, the chart version of a release.
	Revision string
	// Source names the object it takes that revision from, in its
	// namespace or the one its reference names.
	Source string
	// URL is where a source fetches from, without credentials.
	URL string
	// Chart is a HelmRelease's chart name.
	Chart string
	// Tags is the number of tags an ImageRepository's last scan kept.
	Tags *int
}

// artifactRevision returns the revision of a source's artifact.
func artifactRevision(a *meta.Artifact) string {
	if a == nil {
		return ""
	}
	return a.Revision
}

func gitRepositoryInfo(o client.Object) Info {
	r := o.(*sourcev1.GitRepository)
	return Info{Revision: artifactRevision(r.Status.Artifact), URL: redact.URL(r.Spec.URL)}
}

func ociRepositoryInfo(o client.Object) Info {
	r := o.(*sourcev1.OCIRepository)
	return Info{Revision: artifactRevision(r.Status.Artifact), URL: redact.URL(r.Spec.URL)}
}

func bucketInfo(o client.Object) Info {
	b := o.(*sourcev1.Bucket)
	return Info{Revision: artifactRevision(b.Status.Artifact), URL: redact.URL(b.Spec.Endpoint + "/" + b.Spec.BucketName)}
}

func helmRepositoryInfo(o client.Object) Info {
	r := o.(*sourcev1.HelmRepository)
	return Info{Revision: artifactRevision(r.Status.Artifact), URL: redact.URL(r.Spec.URL)}
}

func helmChartInfo(o client.Object) Info {
	c := o.(*sourcev1.HelmChart)
	return Info{Revision: artifactRevision(c.Status.Artifact), Source: c.Spec.SourceRef.Name, Chart: c.Spec.Chart}
}

func kustomizationInfo(o client.Object) Info {
	k := o.(*kustomizev1.Kustomization)
	return Info{Revision: k.Status.LastAppliedRevision, Source: k.Spec.SourceRef.Name}
}

func helmReleaseInfo(o client.Object) Info {
	hr := o.(*helmv2.HelmRelease)
	info := Info{Revision: hr.Status.LastAttemptedRevision}
	switch {
	case hr.Spec.ChartRef != nil:
		info.Source = hr.Spec.ChartRef.Name
	case hr.Spec.Chart != nil:
		info.Source, info.Chart = hr.Spec.Chart.Spec.SourceRef.Name, hr.Spec.Chart.Spec.Chart
	}
	if len(hr.Status.History) > 0 {
		latest := hr.Status.History[0]
		info.Revision, info.Chart = latest.ChartVersion, latest.ChartName
	}
	return info
}

func imageRepositoryInfo(o client.Object) Info {
	r := o.(*imagev1.ImageRepository)
	info := Info{URL: redact.URL(r.Spec.Image)}
	if r.Status.LastScanResult != nil {
		info.Tags = &r.Status.LastScanResult.TagCount
	}
	return info
}

func imagePolicyInfo(o client.Object) Info {
	p := o.(*imagev1.ImagePolicy)
	info := Info{Source: p.Spec.ImageRepositoryRef.Name}
	if p.Status.LatestRef != nil {
		info.Revision = p.Status.LatestRef.Tag
	}
	return info
}

func imageUpdateAutomationInfo(o client.Object) Info {
	a := o.(*imagev1.ImageUpdateAutomation)
	return Info{Revision: a.Status.LastPushCommit, Source: a.Spec.SourceRef.Name}
}

func alertInfo(o client.Object) Info {
	return Info{Source: o.(*notificationv1beta3.Alert).Spec.ProviderRef.Name}
}

func externalArtifactInfo(o client.Object) Info {
	ea := o.(*sourcev1.ExternalArtifact)
	info := Info{Revision: artifactRevision(ea.Status.Artifact)}
	if ref := ea.Spec.SourceRef; ref != nil {
		info.Source = ref.Name
	}
	return info
}

func artifactGeneratorInfo(o client.Object) Info {
	ag := o.(*sourceextv1beta1.ArtifactGenerator)
	names := make([]string, 0, len(ag.Spec.Sources))
	for _, s := range ag.Spec.Sources {
		names = append(names, s.Name)
	}
	return Info{Source: strings.Join(names, ",")}
}
