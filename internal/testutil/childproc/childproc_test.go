package childproc

import (
	"fmt"
	"sync"
	"testing"

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
