package manager

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestSharedArtifacts: the replicas share their artifacts' address when
// they share the objects and advertise an address other than their own
// server's (the install's Service); not without shards, without an
// advertised address, or when each advertises its own.
func TestSharedArtifacts(t *testing.T) {
	t.Setenv("POD_IP", "10.0.0.7")
	tests := []struct {
		name   string
		shards string
		addr   string
		adv    string
		want   bool
	}{
		{"behind a Service", ShardsAuto, ":9090", "source-controller.flux-system.svc", true},
		{"each at its own address", ShardsAuto, ":9090", "10.0.0.7:9090", false},
		{"on loopback, each at its own", ShardsAuto, "127.0.0.1:9090", "127.0.0.1:9090", false},
		{"no address advertised", ShardsAuto, ":9090", "", false},
		{"without shards", "", ":9090", "source-controller.flux-system.svc", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Shards: ShardOptions{Mode: tt.shards}, Source: SourceOptions{StorageAddr: tt.addr, StorageAdvAddr: tt.adv}}
			NewWithT(t).Expect(sharedArtifacts(opts)).To(Equal(tt.want))
		})
	}
}

// TestKindOfFolder: an artifact's first folder names its source's kind,
// one whose objects carry an artifact.
func TestKindOfFolder(t *testing.T) {
	g := NewWithT(t)
	row, ok := kindOfFolder("gitrepository")
	g.Expect(ok).To(BeTrue())
	g.Expect(row.Kind).To(Equal("GitRepository"))
	row, ok = kindOfFolder("externalartifact")
	g.Expect(ok).To(BeTrue())
	g.Expect(row.Kind).To(Equal("ExternalArtifact"))
	_, ok = kindOfFolder("..")
	g.Expect(ok).To(BeFalse())
	_, ok = kindOfFolder("kustomization")
	g.Expect(ok).To(BeFalse(), "no artifact: a request naming one must not start a watch of every Kustomization")
}

// TestStoredAgainEvents: the artifacts built again are passed to every
// controller that subscribed to their kind, as events of their source, and
// to no other; a controller that does not take them loses what overflows
// its buffer rather than hold the source controller up.
func TestStoredAgainEvents(t *testing.T) {
	g := NewWithT(t)
	var events storedAgainEvents
	kustomizations, releases := events.subscribe("GitRepository"), events.subscribe("GitRepository")
	charts := events.subscribe("HelmChart")
	events.tell("GitRepository", &metav1.ObjectMeta{Namespace: "team", Name: "app"})
	for _, ch := range []<-chan event.GenericEvent{kustomizations, releases} {
		var e event.GenericEvent
		g.Expect(ch).To(Receive(&e))
		g.Expect(e.Object.GetNamespace() + "/" + e.Object.GetName()).To(Equal("team/app"))
	}
	g.Expect(charts).NotTo(Receive())

	for range storedAgainBuffer + 10 {
		events.tell("HelmChart", &metav1.ObjectMeta{Namespace: "team", Name: "chart"})
	}
	g.Expect(charts).To(HaveLen(storedAgainBuffer), "what overflows is dropped: the consumers' requeue runs them")
}
