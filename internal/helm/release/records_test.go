package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// recordRelease returns a release of chart app whose manifest and values
// carry text, labelled by the user.
func recordRelease(version int, status rcommon.Status, text string) *releasev1.Release {
	return &releasev1.Release{
		Name: "app", Namespace: "team", Version: version,
		Info:     &releasev1.Info{Status: status, Description: "Install complete"},
		Chart:    &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0", APIVersion: chart.APIVersionV2}, Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte("data: {{ .Values.text }}")}}},
		Config:   map[string]any{"text": text},
		Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  text: " + text + "\n",
		Labels:   map[string]string{"team": "a"},
	}
}

// recordDrivers returns Helm's Secrets driver and recordSecrets, each on a
// namespace of its own, and the function that reads the record under key
// that each wrote (Helm's, then ours).
func recordDrivers(t *testing.T, g *WithT, key string) (*driver.Secrets, *recordSecrets, func() (helm, ours *corev1.Secret)) {
	clientset, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	helmNS, oursNS := env.CreateNamespace(t), env.CreateNamespace(t)
	get := func(ns string) *corev1.Secret {
		s, err := clientset.CoreV1().Secrets(ns).Get(context.Background(), key, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}
	return driver.NewSecrets(clientset.CoreV1().Secrets(helmNS)), newRecordSecrets(clientset.CoreV1().Secrets(oursNS)),
		func() (*corev1.Secret, *corev1.Secret) { return get(helmNS), get(oursNS) }
}

// The records the driver writes are Helm's, byte for byte: the same
// Secret (name, type, labels but the time) with the same data, for a
// creation and an update, and Helm's own driver reads them back.
func TestRecordSecrets_WriteWhatHelmWrites(t *testing.T) {
	g := NewWithT(t)
	key := secretName("app", 1)
	helm, ours, stored := recordDrivers(t, g, key)
	same := func(stamp string) {
		h, o := stored()
		g.Expect(o.Type).To(Equal(h.Type))
		g.Expect(o.Data).To(Equal(h.Data), "the same encoding, byte for byte")
		for _, s := range []*corev1.Secret{h, o} {
			at, err := strconv.ParseInt(s.Labels[stamp], 10, 64)
			g.Expect(err).NotTo(HaveOccurred(), "%s in seconds", stamp)
			g.Expect(time.Since(time.Unix(at, 0))).To(BeNumerically("<", time.Minute))
			delete(s.Labels, stamp)
		}
		g.Expect(o.Labels).To(Equal(h.Labels))
		g.Expect(o.Labels).To(HaveKeyWithValue("owner", "helm"))
	}

	pending := recordRelease(1, rcommon.StatusPendingInstall, "one")
	g.Expect(helm.Create(key, pending)).To(Succeed())
	g.Expect(ours.Create(key, pending)).To(Succeed())
	same("createdAt")
	g.Expect(ours.Create(key, pending)).To(MatchError(driver.ErrReleaseExists))

	deployed := recordRelease(1, rcommon.StatusDeployed, "one")
	g.Expect(helm.Update(key, deployed)).To(Succeed())
	g.Expect(ours.Update(key, deployed)).To(Succeed())
	same("modifiedAt")

	read, err := ours.Secrets.Get(key) // Helm's own driver, reading what ours wrote
	g.Expect(err).NotTo(HaveOccurred())
	rel, ok := read.(*releasev1.Release)
	g.Expect(ok).To(BeTrue(), "a %T", read)
	g.Expect(rel.Info.Status).To(Equal(rcommon.StatusDeployed))
	g.Expect(rel.Manifest).To(Equal(deployed.Manifest))
	g.Expect(rel.Config).To(Equal(deployed.Config))
}

// A release read back from its record carries the time stamps it was
// written with (an upgrade labels its successor with the last release's
// labels): Helm keeps them over the time of the write, and so does the
// driver.
func TestRecordSecrets_KeepTheReleasesOwnStamps(t *testing.T) {
	g := NewWithT(t)
	key := secretName("app", 2)
	helm, ours, stored := recordDrivers(t, g, key)
	sameLabels := func() {
		h, o := stored()
		g.Expect(o.Labels).To(Equal(h.Labels))
	}
	rel := recordRelease(2, rcommon.StatusPendingUpgrade, "two")
	rel.Labels = map[string]string{"team": "a", "createdAt": "1700000000", "modifiedAt": "1700000001"}
	g.Expect(helm.Create(key, rel)).To(Succeed())
	g.Expect(ours.Create(key, rel)).To(Succeed())
	sameLabels()
	_, o := stored()
	g.Expect(o.Labels).To(HaveKeyWithValue("createdAt", "1700000000"))

	rel.Info.Status = rcommon.StatusDeployed
	g.Expect(helm.Update(key, rel)).To(Succeed())
	g.Expect(ours.Update(key, rel)).To(Succeed())
	sameLabels()
	_, o = stored()
	g.Expect(o.Labels).To(And(HaveKeyWithValue("modifiedAt", "1700000001"), HaveKeyWithValue("status", "deployed")))
}

// A gzip writer that an encoding leaves for the next keeps nothing of it.
func TestEncodeRecord_ReusesItsWritersCleanly(t *testing.T) {
	g := NewWithT(t)
	for i := range 20 {
		rel := recordRelease(i+1, rcommon.StatusDeployed, strconv.Itoa(i*7919))
		encoded, err := encodeRecord(rel)
		g.Expect(err).NotTo(HaveOccurred())
		decoded, err := decodeRecordForTest(encoded)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(decoded.Version).To(Equal(i + 1))
		g.Expect(decoded.Manifest).To(Equal(rel.Manifest))
	}
}

// decodeRecordForTest reads a record's data as Helm does: base64, gzip,
// JSON.
func decodeRecordForTest(encoded []byte) (*releasev1.Release, error) {
	zipped, err := base64.StdEncoding.DecodeString(string(encoded))
	if err != nil {
		return nil, err
	}
	r, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var rel releasev1.Release
	return &rel, json.Unmarshal(raw, &rel)
}

// BenchmarkEncodeRecord encodes a release as a record, with the writers
// kept (kept) and with a new writer each time, as Helm's driver does (new).
func BenchmarkEncodeRecord(b *testing.B) {
	rel := recordRelease(1, rcommon.StatusDeployed, strings.Repeat("a value of the manifest ", 400))
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeRecord(rel); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for len(recordWriters) > 0 {
				<-recordWriters // none kept: encodeRecord makes its writer
			}
			if _, err := encodeRecord(rel); err != nil {
				b.Fatal(err)
			}
		}
	})
}
