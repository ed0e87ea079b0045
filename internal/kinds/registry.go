package kinds

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	helmv2 "github.com/windlass-dev/windlass/api/helm/v2"
	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	notificationv1beta3 "github.com/windlass-dev/windlass/api/notification/v1beta3"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
	sourceextv1beta1 "github.com/windlass-dev/windlass/api/sourceextensions/v1beta1"
)

// All are the kinds Windlass serves, in dependency order: sources before
// what uses them (a HelmChart after the sources it is built from, an
// ArtifactGenerator after every source kind, its ExternalArtifacts after
// it, Kustomizations and HelmReleases after all of them); then the image
// kinds (a policy after the repository it elects from, an automation after
// its policies); then Gates, which sources, appliers and automations wait behind; last the
// notification kinds, which only watch or call on the others. The command
// line lists kinds in this order.
var All = []Kind{
	{
		GroupVersion: sourcev1.GroupVersion, Kind: sourcev1.GitRepositoryKind,
		New:     func() client.Object { return &sourcev1.GitRepository{} },
		NewList: func() client.ObjectList { return &sourcev1.GitRepositoryList{} },
		LastHandled: func(o client.Object) string {
			return o.(*sourcev1.GitRepository).Status.GetLastHandledReconcileRequest()
		},
		Info:       gitRepositoryInfo,
		Controller: SourceController, Gates: SourceGates, WebhookTarget: true, AlertSource: true,
		SourceFor: []Use{KustomizationSource, HelmChartSource, GeneratorSource},
		Words:     []string{"source", "git"}, Aliases: []string{"gitrepository", "gitrepositories"},
	},
	{
		GroupVersion: sourcev1.GroupVersion, Kind: sourcev1.OCIRepositoryKind,
		New:     func() client.Object { return &sourcev1.OCIRepository{} },
		NewList: func() client.ObjectList { return &sourcev1.OCIRepositoryList{} },
		LastHandled: func(o client.Object) string {
			return o.(*sourcev1.OCIRepository).Status.GetLastHandledReconcileRequest()
		},
		Info:       ociRepositoryInfo,
		Controller: SourceController, Gates: SourceGates, WebhookTarget: true, AlertSource: true,
		SourceFor: []Use{KustomizationSource, ChartRef, GeneratorSource},
		Words:     []string{"source", "oci"}, Aliases: []string{"ocirepository", "ocirepositories", "ocirepo"},
	},
	{
		GroupVersion: sourcev1.GroupVersion, Kind: sourcev1.BucketKind,
		New:     func() client.Object { return &sourcev1.Bucket{} },
		NewList: func() client.ObjectList { return &sourcev1.BucketList{} },
		LastHandled: func(o client.Object) string {
			return o.(*sourcev1.Bucket).Status.GetLastHandledReconcileRequest()
		},
		Info:       bucketInfo,
		Controller: SourceController, Gates: SourceGates, WebhookTarget: true, AlertSource: true,
		SourceFor: []Use{KustomizationSource, HelmChartSource, GeneratorSource},
		Words:     []string{"source", "bucket"}, Aliases: []string{"bucket", "buckets"},
	},
	{
		GroupVersion: sourcev1.GroupVersion, Kind: sourcev1.HelmRepositoryKind,
		New:     func() client.Object { return &sourcev1.HelmRepository{} },
		NewList: func() client.ObjectList { return &sourcev1.HelmRepositoryList{} },
		LastHandled: func(o client.Object) string {
			return o.(*sourcev1.HelmRepository).Status.GetLastHandledReconcileRequest()
		},
		Info:       helmRepositoryInfo,
		Controller: SourceController, Gates: SourceGates, WebhookTarget: true, AlertSource: true,
		SourceFor: []Use{HelmChartSource},
		Words:     []string{"source", "helm"}, Aliases: []string{"helmrepository", "helmrepositories", "helmrepo"},
	},
	{
		GroupVersion: sourcev1.GroupVersion, Kind: sourcev1.HelmChartKind,
		New:     func() client.Object { return &sourcev1.HelmChart{} },
		NewList: func() client.ObjectList { return &sourcev1.HelmChartList{} },
		LastHandled: func(o client.Object) string {
			return o.(*sourcev1.HelmChart).Status.GetLastHandledReconcileRequest()
		},
		Info:       helmChartInfo,
		Controller: SourceController, Gates: SourceGates, WebhookTarget: true, AlertSource: true,
		SourceFor: []Use{ChartRef, GeneratorSource},
		Words:     []string{"source", "chart"}, Aliases: []string{"helmchart", "helmcharts", "hc"},
	},
	{
		GroupVersion: sourceextv1beta1.GroupVersion, Kind: sourceextv1beta1.ArtifactGeneratorKind, Finalized: true,
		New:     func() client.Object { return &sourceextv1beta1.ArtifactGenerator{} },
		NewList: func() client.ObjectList { return &sourceextv1beta1.ArtifactGeneratorList{} },
		LastHandled: func(o client.Object) string {
			return o.(*sourceextv1beta1.ArtifactGenerator).Status.GetLastHandledReconcileRequest()
		},
		Info:              artifactGeneratorInfo,
		SuspendAnnotation: sourceextv1beta1.ReconcileAnnotation,
		Controller:        SourceController, Gates: SourceGates, WebhookTarget: true, AlertSource: true,
		Words: []string{"artifactgenerator"}, Aliases: []string{"artifactgenerators", "ag"},
	},
	{
		GroupVersion: sourcev1.GroupVersion, Kind: sourcev1.ExternalArtifactKind,
		New:        func() client.Object { return &sourcev1.ExternalArtifact{} },
		NewList:    func() client.ObjectList { return &sourcev1.ExternalArtifactList{} },
		Info:       externalArtifactInfo,
		Controller: SourceController, Produced: true, Gates: SourceGates, AlertSource: true,
		SourceFor: []Use{KustomizationSource, ChartRef, GeneratorSource},
		Words:     []string{"source", "external"}, Aliases: []string{"externalartifact", "externalartifacts", "ea"},
	},
	{
		GroupVersion: kustomizev1.GroupVersion, Kind: kustomizev1.KustomizationKind, Finalized: true,
		New:     func() client.Object { return &kustomizev1.Kustomization{} },
		NewList: func() client.ObjectList { return &kustomizev1.KustomizationList{} },
		LastHandled: func(o client.Object) string {
			return o.(*kustomizev1.Kustomization).Status.GetLastHandledReconcileRequest()
		},
		DependsOn: func(o client.Object) []meta.DependencyReference {
			return o.(*kustomizev1.Kustomization).Spec.DependsOn
		},
		Info:           kustomizationInfo,
		CachedByHolder: true,
		Controller:     KustomizeController, Gates: ApplierGates, WebhookTarget: true, AlertSource: true,
		Words: []string{"kustomization"}, Aliases: []string{"ks", "kustomizations"},
	},
	{
		GroupVersion: helmv2.GroupVersion, Kind: helmv2.HelmReleaseKind, Finalized: true,
		New:         func() client.Object { return &helmv2.HelmRelease{} },
		NewList:     func() client.ObjectList { return &helmv2.HelmReleaseList{} },
		LastHandled: func(o client.Object) string { return o.(*helmv2.HelmRelease).Status.LastHandledReconcileAt },
		DependsOn: func(o client.Object) []meta.DependencyReference {
			return o.(*helmv2.HelmRelease).Spec.DependsOn
		},
		Info:           helmReleaseInfo,
		CachedByHolder: true,
		Controller:     HelmController, Gates: ApplierGates, WebhookTarget: true, AlertSource: true,
		Words: []string{"helmrelease"}, Aliases: []string{"hr", "helmreleases"},
	},
	{
		GroupVersion: imagev1.GroupVersion, Kind: imagev1.ImageRepositoryKind,
		New:     func() client.Object { return &imagev1.ImageRepository{} },
		NewList: func() client.ObjectList { return &imagev1.ImageRepositoryList{} },
		LastHandled: func(o client.Object) string {
			return o.(*imagev1.ImageRepository).Status.GetLastHandledReconcileRequest()
		},
		Info:       imageRepositoryInfo,
		ShardAsOne: true,
		Controller: ImageReflectorController, Gates: SourceGates, WebhookTarget: true, AlertSource: true,
		Words: []string{"image", "repository"}, Aliases: []string{"imagerepository", "imagerepositories", "imgrepo"},
	},
	{
		GroupVersion: imagev1.GroupVersion, Kind: imagev1.ImagePolicyKind,
		New:     func() client.Object { return &imagev1.ImagePolicy{} },
		NewList: func() client.ObjectList { return &imagev1.ImagePolicyList{} },
		LastHandled: func(o client.Object) string {
			return o.(*imagev1.ImagePolicy).Status.GetLastHandledReconcileRequest()
		},
		Info:       imagePolicyInfo,
		ShardAsOne: true,
		Controller: ImageReflectorController, Gates: ApplierGates, WebhookTarget: true, AlertSource: true,
		Words: []string{"image", "policy"}, Aliases: []string{"imagepolicy", "imagepolicies", "imgpol"},
	},
	{
		GroupVersion: imagev1.GroupVersion, Kind: imagev1.ImageUpdateAutomationKind,
		New:     func() client.Object { return &imagev1.ImageUpdateAutomation{} },
		NewList: func() client.ObjectList { return &imagev1.ImageUpdateAutomationList{} },
		LastHandled: func(o client.Object) string {
			return o.(*imagev1.ImageUpdateAutomation).Status.GetLastHandledReconcileRequest()
		},
		Info:           imageUpdateAutomationInfo,
		CachedByHolder: true,
		Controller:     ImageAutomationController, Gates: ApplierGates, WebhookTarget: true, AlertSource: true,
		Words: []string{"image", "update"}, Aliases: []string{"imageupdateautomation", "imageupdateautomations", "iua"},
	},
	{
		GroupVersion: gatingv1alpha1.GroupVersion, Kind: gatingv1alpha1.GateKind,
		New:     func() client.Object { return &gatingv1alpha1.Gate{} },
		NewList: func() client.ObjectList { return &gatingv1alpha1.GateList{} },
		LastHandled: func(o client.Object) string {
			return o.(*gatingv1alpha1.Gate).Status.GetLastHandledReconcileRequest()
		},
		Controller: GatingController, Unsharded: true, WebhookTarget: true,
		Words: []string{"gate"}, Aliases: []string{"gates"},
	},
	{
		GroupVersion: notificationv1beta3.GroupVersion, Kind: notificationv1beta3.ProviderKind,
		New:        func() client.Object { return &notificationv1beta3.Provider{} },
		NewList:    func() client.ObjectList { return &notificationv1beta3.ProviderList{} },
		Controller: NotificationController, Static: true,
		Words: []string{"alert-provider"}, Aliases: []string{"alert-providers", "provider", "providers"},
	},
	{
		GroupVersion: notificationv1beta3.GroupVersion, Kind: notificationv1beta3.AlertKind,
		New:        func() client.Object { return &notificationv1beta3.Alert{} },
		NewList:    func() client.ObjectList { return &notificationv1beta3.AlertList{} },
		Info:       alertInfo,
		Controller: NotificationController, Static: true,
		Words: []string{"alert"}, Aliases: []string{"alerts"},
	},
	{
		GroupVersion: notificationv1.GroupVersion, Kind: notificationv1.ReceiverKind,
		New:     func() client.Object { return &notificationv1.Receiver{} },
		NewList: func() client.ObjectList { return &notificationv1.ReceiverList{} },
		LastHandled: func(o client.Object) string {
			return o.(*notificationv1.Receiver).Status.GetLastHandledReconcileRequest()
		},
		Controller: NotificationController,
		Words:      []string{"receiver"}, Aliases: []string{"receivers", "rcv"},
	},
}
