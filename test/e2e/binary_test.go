package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/manager"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// `windlass controller --controllers` with a name it does not know exits
// non-zero with a message that names the choices, before it connects to the
// cluster or opens any port.
func TestController_UnknownControllerName(t *testing.T) {
	g := NewWithT(t)

	// The kubeconfig points at a listener that counts connections: there
	// must be none.
	apiServer, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer apiServer.Close()
	var connections atomic.Int64
	go func() {
		for {
			conn, err := apiServer.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			conn.Close()
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: unreachable
  cluster:
    server: https://%s
    insecure-skip-tls-verify: true
users:
- name: nobody
  user:
    token: not-a-token
contexts:
- name: unreachable
  context:
    cluster: unreachable
    user: nobody
current-context: unreachable
`, apiServer.Addr())), 0o600)).To(Succeed())
	ports, err := childproc.FreeAddrs(3)
	g.Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := windlassCommand(ctx, "controller",
		"--controllers", "source,helm-controller",
		"--kubeconfig", kubeconfig,
		"--storage-path", t.TempDir(),
		"--storage-addr", ports[0],
		"--metrics-addr", ports[1],
		"--health-addr", ports[2],
	)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err = cmd.Run()
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "windlass did not exit: %s", out.String())

	var exitErr *exec.ExitError
	g.Expect(errors.As(err, &exitErr)).To(BeTrue(), "want a non-zero exit, got %v: %s", err, out.String())
	g.Expect(exitErr.ExitCode()).NotTo(Equal(0))
	var message string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, `unknown controller "helm"`) {
			message = line
		}
	}
	g.Expect(message).NotTo(BeEmpty(), "no message about the unknown name: %s", out.String())
	for _, name := range manager.AllControllers {
		g.Expect(message).To(ContainSubstring(name), "the message names the choices")
	}
	g.Expect(out.String()).NotTo(ContainSubstring("Starting the manager"))
	g.Expect(connections.Load()).To(BeZero(), "windlass connected to the cluster before it checked its flags")
}
