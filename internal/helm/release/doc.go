// Package release runs Helm actions (install, upgrade, test, rollback,
// uninstall, render) with the Helm SDK for the HelmRelease controller and
// the CLI.
//
// A Getter holds the Kubernetes clients of one cluster and identity: one
// HTTP transport, clientset, dynamic client, memory-cached discovery
// client and RESTMapper, shared by every release. A Runner acts on the
// releases stored as Secrets (sh.helm.release.v1.<name>.v<N>, the helm
// CLI's format, so existing releases are adopted as they are) in one
// storage namespace; it is cheap, holds no global state and is safe for
// concurrent use on different releases.
//
//	getter, _ := release.NewGetter(restConfig)
//	runner, _ := release.New(getter, "flux-system", release.WithLogHandler(h))
//	rel, err := runner.Install(ctx, chart, values, release.InstallOptions{
//		ReleaseName: "podinfo", Namespace: "apps", Wait: true, ServerSideApply: true,
//	})
//
// Every action is bounded by its timeout and its context: waits (objects,
// hooks, tests) end when either ends, and the release is then marked
// failed. The SDK gets copies of the chart and values, so one loaded chart
// can serve many releases at once.
//
// A process killed during an action leaves the release pending-install,
// pending-upgrade or pending-rollback, which the SDK refuses to act on.
// RecoverPending marks such a release failed; an Upgrade then proceeds
// (from the last deployed version, or from the failed first one), as does
// an Install with Replace.
//
// Snapshot, ConfigDigest and ObjectsOf turn releases into what a
// HelmRelease's status records.
package release
