package childproc

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestFreeAddrsAreDistinctLoopbackAddresses(t *testing.T) {
	g := NewWithT(t)
	addrs, err := FreeAddrs(5)
	g.Expect(err).NotTo(HaveOccurred())
	seen := map[string]bool{}
	for _, a := range addrs {
		g.Expect(a).To(HavePrefix("127.0.0.1:"))
		seen[a] = true
	}
	g.Expect(seen).To(HaveLen(5))
}

func TestBufferIsSafeForConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	var b Buffer
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			fmt.Fprintf(&b, "line %d\n", i)
			_ = b.String()
		})
	}
	wg.Wait()
	g.Expect(b.String()).To(HaveLen(20*len("line 0\n") + 10))
}

func TestProcessTerminateAndOutput(t *testing.T) {
	g := NewWithT(t)
	p, err := Start(exec.Command("sh", "-c", `trap 'echo bye; exit 0' TERM; echo started; while true; do sleep 0.05; done`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(p.Output).Should(ContainSubstring("started"))
	g.Expect(p.Exited()).To(BeFalse())
	g.Expect(p.Terminate(10 * time.Second)).To(Succeed())
	g.Expect(p.Exited()).To(BeTrue())
	g.Expect(p.Output()).To(ContainSubstring("bye"))
}

func TestProcessWaitHTTPFailsWhenTheProcessExits(t *testing.T) {
	g := NewWithT(t)
	p, err := Start(exec.Command("sh", "-c", "exit 3"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.WaitHTTP(context.Background(), "http://127.0.0.1:1/readyz", 10*time.Second)).
		To(MatchError(ContainSubstring("exited")))
	g.Expect(p.Err()).To(HaveOccurred())
}

func TestCleanEnv(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("KUBECONFIG", "/somewhere")
	t.Setenv("KEEP_ME", "1")
	env := CleanEnv()
	g.Expect(env).To(ContainElement("KEEP_ME=1"))
	g.Expect(env).NotTo(ContainElement(HavePrefix("KUBECONFIG=")))
}
