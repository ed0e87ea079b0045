package cli

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/monitoring"
)

// serveProfiles serves Go's profiles, as a controller with --enable-pprof
// does on its metrics port, on a listener at host until the test ends,
// and returns the listener's address.
func serveProfiles(t *testing.T, host string, pprof bool) string {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if pprof {
		for path, h := range manager.PprofHandlers() {
			mux.Handle(path, h)
		}
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// expectProfile expects file to hold a pprof profile (gzipped protobuf).
func expectProfile(g *WithT, file string) {
	data, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(data)).To(BeNumerically(">", 100))
	g.Expect(data[:2]).To(Equal([]byte{0x1f, 0x8b}), "a gzipped profile")
}

func TestDebugProfileFromAURL(t *testing.T) {
	g := NewWithT(t)
	addr := serveProfiles(t, "127.0.0.1", true)
	file := filepath.Join(t.TempDir(), "heap.pprof")
	out, _, err := runWithoutKubeconfig("debug", "profile", "heap", "--url", "http://"+addr, "-o", file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("✔ heap profile of http://" + addr + " written to " + file + " (" + size(g, file) + " bytes): go tool pprof " + file + "\n"))
	expectProfile(g, file)

	off := serveProfiles(t, "127.0.0.1", false)
	_, _, err = runWithoutKubeconfig("debug", "profile", "--url", "http://"+off, "-o", file)
	g.Expect(err).To(MatchError("http://" + off + " serves no profiles (HTTP 404): start the controller with --enable-pprof"))
	_, _, err = runWithoutKubeconfig("debug", "profile", "stack", "--url", "http://"+addr)
	g.Expect(err).To(MatchError(ContainSubstring(`unknown profile "stack"`)))
}

// TestDebugProfileFromThePod fetches a profile through the API server's
// proxy to a pod, whose address is one of this host's: the API server
// proxies to no loopback address.
func TestDebugProfileFromThePod(t *testing.T) {
	g := NewWithT(t)
	host := nonLoopbackAddress(t)
	_, port, _ := net.SplitHostPort(serveProfiles(t, host, true))
	portNumber, _ := strconv.Atoi(port)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "windlass-7d4f9-x2x9v", Labels: map[string]string{monitoring.PodLabel: monitoring.PodLabelValue}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "windlass",
			Ports: []corev1.ContainerPort{{Name: monitoring.MetricsPort, ContainerPort: int32(portNumber)}}}}},
	}
	g.Expect(env.Client.Create(ctx, pod)).To(Succeed())
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, PodIPs: []corev1.PodIP{{IP: host}}}
	g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())

	file := filepath.Join(t.TempDir(), "goroutine.pprof")
	out, _, err := run(t, "debug", "profile", "goroutine", "-n", ns, "-o", file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("✔ goroutine profile of pod " + ns + "/windlass-7d4f9-x2x9v written to " + file))
	expectProfile(g, file)

	_, _, err = run(t, "debug", "profile", "-n", env.CreateNamespace(t))
	g.Expect(err).To(MatchError(ContainSubstring("no running pod labelled app.kubernetes.io/part-of=windlass in namespace")))
}

// nonLoopbackAddress returns an IPv4 address of this host that is not a
// loopback or link-local one.
func nonLoopbackAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
			return ip.IP.String()
		}
	}
	t.Skip("this host has no IPv4 address besides loopback: the API server proxies to none")
	return ""
}

// size returns the size of file in bytes, in decimal.
func size(g *WithT, file string) string {
	info, err := os.Stat(file)
	g.Expect(err).NotTo(HaveOccurred())
	return strconv.FormatInt(info.Size(), 10)
}
