package devenv

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatingv1alpha1 "github.com/windlass-dev/windlass/api/gating/v1alpha1"
	kustomizev1 "github.com/windlass-dev/windlass/api/kustomize/v1"
	"github.com/windlass-dev/windlass/api/meta"
	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// Namespace is where `windlass dev` creates its sources and Kustomizations.
const Namespace = "flux-system"

// repoName is the name of the served repository and of its GitRepository.
const repoName = "dev"

// demoGate is the Gate the demo app waits behind: open by default, so that
// `windlass gate close` shows a change held back.
const demoGate = "demo-approval"

// demoFiles are the demo repository: two Kustomizations' worth of
// manifests, the app depending on its settings.
var demoFiles = map[string]string{
	"README.md": `# The windlass dev demo

- infrastructure/: the demo namespace and a ConfigMap whose greeting is
  substituted by the demo-infrastructure Kustomization (postBuild.substitute).
- app/: a Deployment and its ConfigMap, applied by the demo-app
  Kustomization once demo-infrastructure is Ready (dependsOn), and while
  the Gate demo-approval is open (it is, by default: close it with
  windlass gate close demo-approval and a change to app/ waits).

The local control plane has no kubelet, so no pod can run: the Deployment is
scaled to zero, which kube-controller-manager reports as Available, and the
health check of demo-app waits for that.
`,
	"infrastructure/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - namespace.yaml
  - settings.yaml
`,
	"infrastructure/namespace.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: demo
`,
	"infrastructure/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: demo
data:
  greeting: "${greeting}"
  environment: "${environment:=dev}"
`,
	"app/kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: demo
resources:
  - config.yaml
  - deployment.yaml
`,
	"app/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  index.html: "<h1>Deployed by Windlass</h1>"
`,
	"app/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  # No kubelet runs in windlass dev: scaled to zero, the Deployment becomes
  # Available as soon as kube-controller-manager has rolled it out.
  replicas: 0
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports:
            - containerPort: 80
          volumeMounts:
            - name: content
              mountPath: /usr/share/nginx/html
      volumes:
        - name: content
          configMap:
            name: web-config
`,
}

// syncObjects are the objects that deploy the repository at url: for the
// demo, its Gate, the GitRepository and two Kustomizations; for a user's
// folder, the GitRepository (first) and one Kustomization (second) of the
// whole of it.
func syncObjects(url string, demo bool) []client.Object {
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: repoName},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: time.Minute},
			Reference: &sourcev1.GitRepositoryRef{Branch: branch}},
	}
	if !demo {
		return []client.Object{repo, kustomization(repoName, "./", func(spec *kustomizev1.KustomizationSpec) {})}
	}
	infra := kustomization("demo-infrastructure", "./infrastructure", func(spec *kustomizev1.KustomizationSpec) {
		spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"greeting": "hello from windlass dev"}}
	})
	approval := &gatingv1alpha1.Gate{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatingv1alpha1.GroupVersion.String(), Kind: gatingv1alpha1.GateKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: demoGate},
		Spec:       gatingv1alpha1.GateSpec{Default: gatingv1alpha1.GateOpened, Window: &metav1.Duration{Duration: 10 * time.Minute}},
	}
	app := kustomization("demo-app", "./app", func(spec *kustomizev1.KustomizationSpec) {
		spec.DependsOn = []meta.DependencyReference{{Name: infra.GetName()}}
		spec.Wait = true
		spec.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
		spec.Gates = []meta.NamespacedObjectReference{{Name: demoGate}}
	})
	return []client.Object{approval, repo, infra, app}
}

// kustomization returns a pruning Kustomization of the dev repository's
// folder path, with change applied to its spec.
func kustomization(name, path string, change func(*kustomizev1.KustomizationSpec)) client.Object {
	ks := &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: kustomizev1.KustomizationSpec{
			Interval: metav1.Duration{Duration: 10 * time.Minute}, Path: path, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: repoName},
		},
	}
	change(&ks.Spec)
	return ks
}

// describe names obj as "Kind namespace/name".
func describe(obj client.Object) string {
	return fmt.Sprintf("%s %s/%s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName())
}

// requestReconcile returns a merge patch that asks for a reconciliation now.
func requestReconcile() client.Patch {
	return client.RawPatch("application/merge-patch+json", fmt.Appendf(nil,
		`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano)))
}
