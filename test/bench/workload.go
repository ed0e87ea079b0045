package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// Layouts of the sources.
const (
	// LayoutRepoPerApp gives every application a repository and a
	// GitRepository of its own.
	LayoutRepoPerApp = "repo-per-app"
	// LayoutMonorepo keeps every application in a folder of one
	// repository, behind one GitRepository.
	LayoutMonorepo = "monorepo"
)

// branch is the branch every source follows.
const branch = "main"

// appName is the name of application i; it is also the name of its
// Kustomization and, in the repo-per-app layout, of its GitRepository and
// repository.
func appName(i int) string { return fmt.Sprintf("app-%d", i) }

// monorepoName names the one repository and GitRepository of the monorepo
// layout.
const monorepoName = "monorepo"

// appManifests is the workload of one application, with its name left as
// the ${app} variable for postBuild substitution: a Deployment scaled to
// zero, its ServiceAccount, a Service and a ConfigMap whose data carries
// revision, the value a change edits.
func appManifests(revision int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${app}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${app}
data:
  app: ${app}
  revision: "%d"
---
apiVersion: v1
kind: Service
metadata:
  name: ${app}
spec:
  selector:
    app: ${app}
  ports:
  - name: http
    port: 80
    targetPort: 8080
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${app}
spec:
  replicas: 0
  selector:
    matchLabels:
      app: ${app}
  template:
    metadata:
      labels:
        app: ${app}
    spec:
      serviceAccountName: ${app}
      containers:
      - name: app
        image: registry.invalid/bench/app:1.0.0
        ports:
        - containerPort: 8080
`, revision)
}

// appPath is the folder of application i in its repository: the root
// folder ./app of its own repository, or ./apps/app-i of the monorepo.
func appPath(layout string, i int) string {
	if layout == LayoutMonorepo {
		return "apps/" + appName(i)
	}
	return "app"
}

// sourceName is the GitRepository that application i is applied from.
func sourceName(layout string, i int) string {
	if layout == LayoutMonorepo {
		return monorepoName
	}
	return appName(i)
}

// sourceInterval is the interval of every source and Kustomization: long,
// so that no tick interferes with the measures (a run at N=10,000 with
// its failover phase lasts about 25 minutes on two cores).
const sourceInterval = time.Hour

// sortedApps returns 0 … n-1 in the order of the applications' names,
// the order the sources are created in.
func sortedApps(n int) []int {
	apps := make([]int, n)
	for i := range apps {
		apps[i] = i
	}
	slices.SortFunc(apps, func(a, b int) int { return strings.Compare(appName(a), appName(b)) })
	return apps
}

// gitRepository returns the GitRepository name in namespace ns for the
// repository at url. Its interval is long, so that no tick interferes
// with the measures.
func gitRepository(ns, name, url string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{
			URL:       url,
			Interval:  metav1.Duration{Duration: sourceInterval},
			Reference: &sourcev1.GitRepositoryRef{Branch: branch},
		},
	}
}

// kustomization returns the Kustomization of application i in namespace
// ns, applied from its source of kit: prune, wait with a one-minute
// timeout, the app's name substituted for ${app}, and a long interval so
// that no tick interferes.
func kustomization(ns string, kit sourceKit, i int) *kustomizev1.Kustomization {
	return &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: appName(i)},
		Spec: kustomizev1.KustomizationSpec{
			Interval:        metav1.Duration{Duration: sourceInterval},
			Path:            "./" + kit.AppPath(i),
			Prune:           true,
			Wait:            true,
			Timeout:         &metav1.Duration{Duration: time.Minute},
			TargetNamespace: ns,
			PostBuild:       &kustomizev1.PostBuild{Substitute: map[string]string{"app": appName(i)}},
			SourceRef: kustomizev1.CrossNamespaceSourceReference{
				Kind: kit.Kind(),
				Name: kit.SourceName(i),
			},
		},
	}
}
