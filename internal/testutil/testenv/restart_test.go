package testenv

import (
	"context"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/windlass-dev/windlass/api/source/v1"
)

// The API server restarts on the same address, against the same etcd, with
// the same serving certificate and client CA: the objects are still there,
// and Config and a kubeconfig written before the restart still work.
func TestStopAndStartAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	// A control plane of the test's own: the package's is shared.
	e, err := Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	path, err := e.KubeconfigFile(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	g.Expect(err).NotTo(HaveOccurred())
	user, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	g.Expect(e.Client.Create(ctx, cm)).To(Succeed())
	before, err := url.Parse(e.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(e.StartAPIServer()).To(MatchError(ContainSubstring("not stopped")))
	g.Expect(e.StopAPIServer()).To(Succeed())
	g.Expect(e.StopAPIServer()).To(MatchError(ContainSubstring("already stopped")))
	g.Expect(user.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).
		To(MatchError(ContainSubstring("connection refused")))

	g.Expect(e.StartAPIServer()).To(Succeed())
	g.Expect(e.env.ControlPlane.GetAPIServer().SecureServing.URL("https", "").Host).To(Equal(before.Host), "the address is kept")
	for name, c := range map[string]client.Client{"Config": e.Client, "kubeconfig": user} {
		got := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(cm), got)).To(Succeed(), name)
		g.Expect(got.Data).To(Equal(cm.Data), name)
		g.Expect(c.List(ctx, &sourcev1.GitRepositoryList{})).To(Succeed(), name)
	}
	// Users issued after the restart work too.
	path, err = e.KubeconfigFile(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err = clientcmd.BuildConfigFromFlags("", path)
	g.Expect(err).NotTo(HaveOccurred())
	later, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(later.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())

	// And it can be done again.
	g.Expect(e.StopAPIServer()).To(Succeed())
	g.Expect(e.StartAPIServer()).To(Succeed())
	g.Expect(user.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed())
}
