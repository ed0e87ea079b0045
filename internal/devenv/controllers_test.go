package devenv

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	imagev1 "github.com/windlass-dev/windlass/api/image/v1"
	"github.com/windlass-dev/windlass/internal/controlplane"
	"github.com/windlass-dev/windlass/internal/testutil"
	"github.com/windlass-dev/windlass/internal/testutil/testenv"
)

// TestControllersServeOnLoopback: the controllers of a dev session serve
// the artifacts, the webhooks and the image tags on loopback ports, said in
// the output, and the image reflector keeps its tags under the session's
// storage folder.
func TestControllersServeOnLoopback(t *testing.T) {
	g := NewWithT(t)
	assets, err := testenv.AssetsDir()
	g.Expect(err).NotTo(HaveOccurred())
	t.Setenv(controlplane.AssetsEnv, assets)
	var out bytes.Buffer
	s := &session{opts: Options{Out: &out, KubeconfigOut: filepath.Join(t.TempDir(), "kubeconfig")},
		dir: t.TempDir(), p: newPrinter(&out, false)}
	t.Cleanup(s.stop)
	ctx := context.Background()
	g.Expect(s.startControlPlane(ctx)).To(Succeed(), out.String())
	g.Expect(s.startControllers(ctx)).To(Succeed(), out.String())

	loopback := `http://127\.0\.0\.1:\d+`
	g.Expect(out.String()).To(MatchRegexp(`✔ starting the controllers \(.*\): artifacts served at %s, Receivers' webhooks at %s, image tags at %s; logs in `,
		loopback, loopback, loopback))
	g.Expect(out.String()).To(ContainSubstring("image tags at " + s.tagsAddr + ";"))
	g.Expect(s.tagsAddr).NotTo(Equal(s.webhookAddr))

	host := testutil.StartRegistry(t, "", "")
	testutil.PushImage(t, host+"/app", []string{"1.0.0", "1.1.0"})
	g.Expect(s.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}})).To(Succeed())
	repo := &imagev1.ImageRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "app"},
		Spec:       imagev1.ImageRepositorySpec{Image: host + "/app", Insecure: true, Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(s.client.Create(ctx, repo)).To(Succeed())
	g.Eventually(func() []string { return servedTags(s.tagsAddr + "/images/" + Namespace + "/app/tags") },
		time.Minute, 200*time.Millisecond).Should(ConsistOf("1.0.0", "1.1.0"))

	var stored []string
	g.Expect(filepath.WalkDir(filepath.Join(s.storageDir(), "images"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			stored = append(stored, p)
		}
		return err
	})).To(Succeed())
	g.Expect(stored).NotTo(BeEmpty(), "the tags are stored under %s", s.storageDir())
	g.Expect(strings.HasPrefix(s.storageDir(), s.runDir())).To(BeTrue(), "the storage goes with the run")
}

// servedTags returns the tags that url serves, or nil while it serves
// none.
func servedTags(url string) []string {
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback URL of the test
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Tags []string `json:"tags"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return nil
	}
	return body.Tags
}
