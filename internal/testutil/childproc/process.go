package childproc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a running child process whose stdout and stderr are captured.
type Process struct {
	cmd  *exec.Cmd
	out  Buffer
	done chan struct{}
	err  error
}

// CleanEnv returns this process's environment without the variables that
// would point a child at a cluster of its own (KUBECONFIG, the in-cluster
// variables, RUNTIME_NAMESPACE), so that only its flags decide.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "RUNTIME_NAMESPACE":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Start starts cmd with its output captured and SysProcAttr set.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err returns the exit error once the process has exited.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Output returns what the process has written so far.
func (p *Process) Output() string { return p.out.String() }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Terminate sends SIGTERM and waits up to grace for the process to exit; it
// reports an error unless the process exited with status 0 in time. The
// process is killed if it is still running after grace.
func (p *Process) Terminate(grace time.Duration) error {
	if p.Exited() {
		return fmt.Errorf("the process had already exited: %v", p.err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM: %w", err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("the process exited with %v after SIGTERM", p.err)
		}
		return nil
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("the process was still running %s after SIGTERM; killed it", grace)
	}
}

// Kill kills the process and waits for it to exit.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// WaitHTTP waits up to d until GET url answers 200, failing at once if the
// process exits first.
func (p *Process) WaitHTTP(ctx context.Context, url string, d time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(d)
	var last string
	for {
		if p.Exited() {
			return fmt.Errorf("the process exited before %s answered: %v", url, p.err)
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("GET %s not ready after %s: %s", url, d, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }
