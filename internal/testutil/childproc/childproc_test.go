package childproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestFreeAddrsAreDistinctLoopbackAddressesBelowTheEphemeralRange(t *testing.T) {
	g := NewWithT(t)
	addrs, err := FreeAddrs(5)
	g.Expect(err).NotTo(HaveOccurred())
	_, high := reservablePorts()
	seen := map[string]bool{}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(host).To(Equal("127.0.0.1"))
		g.Expect(strconv.Atoi(port)).To(BeNumerically("<", high))
		seen[a] = true
	}
	g.Expect(seen).To(HaveLen(5))

	more, err := FreeAddrs(5)
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range more {
		g.Expect(seen).NotTo(HaveKey(a), "a port handed out twice in one process")
	}
}

// TestFreeAddrsAreNotHandedToAnotherTestProcess runs this test binary again
// as a second test process, which tries first the ports this process holds:
// it must get none of them.
func TestFreeAddrsAreNotHandedToAnotherTestProcess(t *testing.T) {
	if r := os.Getenv("CHILDPROC_FREE_ADDRS_FROM"); r != "" {
		var low, high int
		if _, err := fmt.Sscanf(r, "%d-%d", &low, &high); err != nil {
			t.Fatal(err)
		}
		addrs, err := freeAddrsIn(10, low, high, low)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("ADDRS", strings.Join(addrs, " "))
		return
	}
	g := NewWithT(t)
	mine, err := FreeAddrs(10)
	g.Expect(err).NotTo(HaveOccurred())
	low, high := 1<<16, 0
	for _, a := range mine {
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		low, high = min(low, port), max(high, port+1)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFreeAddrsAreNotHandedToAnotherTestProcess$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("CHILDPROC_FREE_ADDRS_FROM=%d-%d", low, high+100))
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	_, line, found := strings.Cut(string(out), "ADDRS ")
	g.Expect(found).To(BeTrue(), string(out))
	theirs := strings.Fields(strings.SplitN(line, "\n", 2)[0])
	g.Expect(theirs).To(HaveLen(10))
	for _, a := range mine {
		g.Expect(theirs).NotTo(ContainElement(a))
	}
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
