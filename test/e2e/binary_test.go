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

// `windlass controller` refuses to start, before it connects to the
// cluster or opens any port, with a message that says why: a controller
// name it does not know (the message names the choices), or a plain-HTTP
// proxy in its environment while --insecure-allow-http=false (the message
// names the variable, never its value, which may hold credentials).
func TestController_RefusesToStart(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		env         []string
		wantMessage string
		wantAlso    []string
		hidden      string
	}{
		{name: "unknown controller", args: []string{"--controllers", "source,image-controller"},
			wantMessage: `unknown controller "image"`, wantAlso: manager.AllControllers},
		{name: "plain-HTTP proxy while plain HTTP is refused", args: []string{"--insecure-allow-http=false"},
			env: []string{"HTTPS_PROXY=http://proxy-user:pr0xy-s3cret@127.0.0.1:3128"}, wantMessage: "HTTPS_PROXY names a plain-HTTP proxy",
			hidden: "pr0xy-s3cret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out := runRefused(t, g, tt.env, tt.args...)
			var message string
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, tt.wantMessage) {
					message = line
				}
			}
			g.Expect(message).NotTo(BeEmpty(), "no message %q: %s", tt.wantMessage, out)
			for _, s := range tt.wantAlso {
				g.Expect(message).To(ContainSubstring(s))
			}
			if tt.hidden != "" {
				g.Expect(out).NotTo(ContainSubstring(tt.hidden))
			}
		})
	}
}

// runRefused runs `windlass controller` with args and env added, against a
// kubeconfig whose server only counts connections, and asserts that it
// exits non-zero without starting the manager or connecting. It returns
// the output.
func runRefused(t *testing.T, g *WithT, env []string, args ...string) string {
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
	ports, err := childproc.FreeAddrs(4)
	g.Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := windlassCommand(ctx, append([]string{"controller",
		"--kubeconfig", kubeconfig,
		"--storage-path", t.TempDir(),
		"--storage-addr", ports[0],
		"--metrics-addr", ports[1],
		"--health-addr", ports[2],
		"--receiver-addr", ports[3],
	}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err = cmd.Run()
	g.Expect(ctx.Err()).NotTo(HaveOccurred(), "windlass did not exit: %s", out.String())

	var exitErr *exec.ExitError
	g.Expect(errors.As(err, &exitErr)).To(BeTrue(), "want a non-zero exit, got %v: %s", err, out.String())
	g.Expect(exitErr.ExitCode()).NotTo(Equal(0))
	g.Expect(out.String()).NotTo(ContainSubstring("Starting the manager"))
	g.Expect(connections.Load()).To(BeZero(), "windlass connected to the cluster before it checked its flags")
	return out.String()
}
