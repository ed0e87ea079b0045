package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// The controller runs as it does in a cluster: as a ServiceAccount bound
// to the project's own ClusterRole (config/rbac), with a bound token. An
// administrator's client certificate would make the API server verify a
// certificate chain on every request, which a cluster's controllers do not
// cost it.
const (
	controllerNamespace      = "flux-system"
	controllerServiceAccount = "windlass-controller"
)

// serviceAccountKubeconfig installs the controller's ClusterRole, a
// ServiceAccount bound to it and a token for it, and writes a kubeconfig
// that authenticates with that token to dir/kubeconfig.
func serviceAccountKubeconfig(ctx context.Context, env *testenv.Environment, dir string) (string, error) {
	role, err := controllerRole()
	if err != nil {
		return "", err
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: controllerServiceAccount}},
		role,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: controllerServiceAccount},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: controllerNamespace, Name: controllerServiceAccount}},
		},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return "", err
	}
	expiry := int64((24 * time.Hour).Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(controllerNamespace).CreateToken(ctx, controllerServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for the controller: %w", err)
	}
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["bench"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	kubeconfig.AuthInfos["controller"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kubeconfig.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "controller", Namespace: controllerNamespace}
	kubeconfig.CurrentContext = "bench"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o600)
}

// controllerRole reads the controller's ClusterRole from config/rbac.
func controllerRole() (*rbacv1.ClusterRole, error) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		return nil, fmt.Errorf("reading config/rbac/role.yaml: %w", err)
	}
	return role, nil
}
