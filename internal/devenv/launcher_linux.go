package devenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
)

// The environment of a launcher. windlass dev starts etcd and
// kube-apiserver through links to its own program named like them; the
// process started so is a launcher: it asks the kernel to kill it when
// windlass dev dies (a parent-death signal, which the test framework that
// starts them does not set) and then becomes the program of that name in
// the folder launcherAssetsEnv names.
const (
	launcherAssetsEnv = "WINDLASS_DEV_LAUNCH_FROM"
	launcherParentEnv = "WINDLASS_DEV_LAUNCH_PARENT"
)

// launched are the programs started through a launcher.
var launched = []string{"etcd", "kube-apiserver"}

func init() { launchIfAsked() }

// launchIfAsked becomes the program this process was started as, when it
// is a launcher; otherwise it returns at once.
func launchIfAsked() {
	assets, name := os.Getenv(launcherAssetsEnv), filepath.Base(os.Args[0])
	if assets == "" || !slices.Contains(launched, name) {
		return
	}
	// The signal is the calling thread's, which execve keeps.
	runtime.LockOSThread()
	parent := os.Getenv(launcherParentEnv)
	_ = os.Unsetenv(launcherAssetsEnv)
	_ = os.Unsetenv(launcherParentEnv)
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "windlass dev: setting the parent-death signal of %s: %v\n", name, errno)
		os.Exit(127)
	}
	if strconv.Itoa(os.Getppid()) != parent {
		os.Exit(1) // windlass dev died before the signal was set
	}
	program := filepath.Join(assets, name)
	err := syscall.Exec(program, append([]string{program}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "windlass dev: starting %s: %v\n", program, err)
	os.Exit(127)
}

// launchers makes, in dir, the links that start etcd and kube-apiserver
// through a launcher, and returns their paths by program name.
func launchers(dir, assets string) (map[string]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, name := range launched {
		paths[name] = filepath.Join(dir, name)
		if err := os.Symlink(self, paths[name]); err != nil {
			return nil, err
		}
	}
	if err := os.Setenv(launcherAssetsEnv, assets); err != nil {
		return nil, err
	}
	return paths, os.Setenv(launcherParentEnv, strconv.Itoa(os.Getpid()))
}
