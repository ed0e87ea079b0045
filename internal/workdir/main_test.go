package workdir

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// ownerEnv, set, makes the test binary an owner process (see owner).
const ownerEnv = "WORKDIR_TEST_OWNER"

// ownerBytes is the size of the file each owner process writes.
const ownerBytes = 3000

func TestMain(m *testing.M) {
	if os.Getenv(ownerEnv) != "" {
		os.Exit(owner())
	}
	os.Exit(m.Run())
}

// owner is the body of an owner process: it makes a temporary folder with
// MkdirTemp, as a reconciler does, writes ownerBytes in a file there,
// prints its work folder and waits until its standard input closes (or it
// is killed).
func owner() int {
	tmp, err := MkdirTemp("clone-")
	if err == nil {
		err = os.WriteFile(filepath.Join(tmp, "file"), make([]byte, ownerBytes), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(filepath.Dir(tmp))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// ownerProc is a running owner process.
type ownerProc struct {
	cmd   *exec.Cmd
	stdin io.Closer
	// dir is its work folder.
	dir string
}

// startOwner starts an owner process, with this process's $TMPDIR, and
// waits until it holds its work folder. It ends when t ends.
func startOwner(t *testing.T, g *WithT) *ownerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ownerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	g.Expect(err).NotTo(HaveOccurred())
	stdout, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd.Start()).To(Succeed())
	p := &ownerProc{cmd: cmd, stdin: stdin}
	t.Cleanup(p.stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	g.Expect(err).NotTo(HaveOccurred(), "the owner process printed no folder")
	p.dir = strings.TrimSpace(line)
	return p
}

// kill kills the owner with SIGKILL, as the OOM killer does, and waits
// until it is gone.
func (p *ownerProc) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// stop ends the owner, if it still runs, and waits until it is gone.
func (p *ownerProc) stop() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
}
