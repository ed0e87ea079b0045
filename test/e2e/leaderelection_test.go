package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// A replica started with --enable-leader-election takes the lease before it
// reconciles, and gives it up when it is stopped, so that the next replica
// takes over at once.
func TestController_LeaderElection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.CreateNamespace(t)
	ports, err := childproc.FreeAddrs(3)
	g.Expect(err).NotTo(HaveOccurred())

	runCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var out childproc.Buffer
	cmd := windlassCommand(runCtx, "controller",
		"--kubeconfig", kubeconfig,
		"--controllers", "source",
		"--enable-leader-election",
		"--leader-election-namespace", ns,
		"--storage-path", t.TempDir(),
		"--storage-addr", ports[0],
		"--metrics-addr", ports[1],
		"--health-addr", ports[2],
		"--log-encoding", "console",
		// Its own namespace only: the story is the Lease's, and the
		// sources of the stories running beside it, in the middle of
		// their runs at SIGTERM, are not its to wait for.
		"--watch-all-namespaces=false",
	)
	cmd.Env = append(cmd.Env, "RUNTIME_NAMESPACE="+ns)
	cmd.Stdout, cmd.Stderr = &out, &out
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	key := client.ObjectKey{Namespace: ns, Name: "windlass-source-leader-election"}
	lease := &coordinationv1.Lease{}
	g.Eventually(func() string {
		if err := env.Client.Get(ctx, key, lease); err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}, timeout, interval).ShouldNot(BeEmpty(), func() string { return out.String() })

	g.Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	g.Eventually(exited, 30*time.Second).Should(Receive(BeNil()), func() string { return out.String() })
	g.Expect(env.Client.Get(ctx, key, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "").To(BeTrue(),
		"the lease is released on a graceful stop")
}
