package release

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

func TestNewGetter(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func() *rest.Config
		wantErr string
	}{
		{name: "no config", cfg: func() *rest.Config { return nil }, wantErr: "no REST config"},
		{name: "the control plane", cfg: func() *rest.Config { return env.Config }},
		{
			name: "a host without a scheme keeps TLS",
			cfg: func() *rest.Config {
				c := rest.CopyConfig(env.Config)
				c.Host = c.Host[len("https://"):]
				return c
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			gt, err := NewGetter(tt.cfg())
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			a, err := gt.ToRESTConfig()
			g.Expect(err).NotTo(HaveOccurred())
			b, err := gt.ToRESTConfig()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(a).NotTo(BeIdenticalTo(b), "callers get copies")
			g.Expect(a.Transport).To(BeIdenticalTo(b.Transport), "one shared transport")
			g.Expect(a.Host).To(HavePrefix("https://"))
			// The shared transport carries the credentials.
			_, err = gt.Clientset().CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			ns, overridden, err := gt.ToRawKubeConfigLoader().Namespace()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ns).To(Equal("default"))
			g.Expect(overridden).To(BeFalse())
		})
	}
}

func TestGetterCapabilities(t *testing.T) {
	g := NewWithT(t)
	gt, err := NewGetter(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	caps, err := gt.capabilities()
	g.Expect(err).NotTo(HaveOccurred())
	// The test control plane is built from source: its version is v0.0.0.
	g.Expect(caps.KubeVersion.Version).To(HavePrefix("v"))
	g.Expect(caps.APIVersions.Has("apps/v1")).To(BeTrue())
	g.Expect(caps.APIVersions.Has("v1/ConfigMap")).To(BeTrue())

	// Each action gets a copy it may change.
	caps.APIVersions[0] = "changed/v1"
	again, err := gt.capabilities()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.APIVersions.Has("changed/v1")).To(BeFalse())
}

func TestMapperResetsOnUnknownKinds(t *testing.T) {
	g := NewWithT(t)
	// A Getter of its own, whose resets no other test causes.
	gt, err := NewGetter(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	mapper, err := gt.ToRESTMapper()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1")
	g.Expect(err).NotTo(HaveOccurred(), "discovery is cached now")
	caps, err := gt.capabilities()
	g.Expect(err).NotTo(HaveOccurred())

	// A CRD created behind the Getter's back.
	ns := env.CreateNamespace(t)
	group := ns + ".mapper.windlass.test"
	deleteCRD(t, group)
	crd := objectsOrFail(t, crdManifest(group))[0]
	_, err = gt.dynamic.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	crds, err := waitEstablished(context.Background(), gt.dynamic.Resource(crdGVR), []string{crd.GetName()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waitDiscoverable(context.Background(), gt.clientset.Discovery(), crds)).To(Succeed())
	g.Expect(caps.APIVersions.Has(group + "/v1")).To(BeFalse())

	mapping, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: "Widget"}, "v1")
	g.Expect(err).NotTo(HaveOccurred(), "the mapper reset itself and found the new kind")
	g.Expect(mapping.Resource.Resource).To(Equal("widgets"))
	caps, err = gt.capabilities()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(caps.APIVersions.Has(group+"/v1")).To(BeTrue(), "the reset refreshed the capabilities")

	// Right after a reset, an unknown kind does not cause another; later
	// it does.
	unknown := schema.GroupKind{Group: "nowhere.windlass.test", Kind: "Nothing"}
	before := resetsOf(gt)
	_, err = mapper.RESTMapping(unknown, "v1")
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue())
	g.Expect(resetsOf(gt)).To(Equal(before))
	time.Sleep(minResetInterval)
	_, err = mapper.RESTMapping(unknown, "v1")
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue())
	g.Expect(resetsOf(gt)).To(Equal(before + 1))
}

// resetsOf counts the resets of gt's discovery information.
func resetsOf(gt *Getter) uint64 {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	return gt.resets
}
