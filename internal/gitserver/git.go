package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Identity used for every commit and annotated tag the package writes.
const (
	// AuthorName is the author and committer name of generated commits.
	AuthorName = "Windlass Test"
	// AuthorEmail is the author and committer email of generated commits.
	AuthorEmail = "test@windlass.invalid"
)

var (
	execPathOnce sync.Once
	execPath     string
	execPathErr  error
)

// gitExecPath returns the folder that holds git's helper programs
// (git-http-backend, git-upload-pack, git-receive-pack).
func gitExecPath() (string, error) {
	execPathOnce.Do(func() {
		gitBin, err := exec.LookPath("git")
		if err != nil {
			execPathErr = fmt.Errorf("gitserver: the system git is required: %w", err)
			return
		}
		cmd := exec.Command(gitBin, "--exec-path")
		cmd.Env = baseEnv(os.TempDir())
		out, err := cmd.Output()
		if err != nil {
			execPathErr = fmt.Errorf("gitserver: git --exec-path: %w", err)
			return
		}
		execPath = strings.TrimSpace(string(out))
		for _, helper := range []string{"git-http-backend", "git-upload-pack", "git-receive-pack"} {
			if _, err := os.Stat(filepath.Join(execPath, helper)); err != nil {
				execPathErr = fmt.Errorf("gitserver: %s not found in git's exec path: %w", helper, err)
				return
			}
		}
	})
	return execPath, execPathErr
}

// baseEnv is the hermetic environment of every git process the package
// starts: no system or global configuration, home set to a private folder,
// no prompts, fixed identity and locale.
func baseEnv(home string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{
		"PATH=" + path,
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"LC_ALL=C",
		"TZ=UTC",
		"GIT_AUTHOR_NAME=" + AuthorName,
		"GIT_AUTHOR_EMAIL=" + AuthorEmail,
		"GIT_COMMITTER_NAME=" + AuthorName,
		"GIT_COMMITTER_EMAIL=" + AuthorEmail,
	}
}

// gitError is returned when a git command fails; it carries git's stderr.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.args, " "), e.err)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, msg)
}

func (e *gitError) Unwrap() error { return e.err }

// runGit runs git with the hermetic environment in dir, feeding stdin (may be
// nil) and returning stdout.
func runGit(home, dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = baseEnv(home)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.Bytes(), nil
}

// exitCode reports the exit code of a failed git command, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// GitCommand returns an exec.Cmd that runs the system git in dir with the
// same hermetic environment the server uses (no system or global
// configuration, private HOME, fixed identity). Tests can use it to clone,
// fetch or push as a real git client would; append to cmd.Env to add, for
// example, GIT_SSH_COMMAND.
func (s *Server) GitCommand(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = baseEnv(s.home)
	return cmd
}
