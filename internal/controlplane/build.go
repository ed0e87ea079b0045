// Package controlplane builds and runs a local Kubernetes control plane:
// etcd, kube-apiserver and kube-controller-manager, compiled from their
// published Go modules once into the user's cache folder. The tests start it
// through envtest (internal/testutil/testenv) and `windlass dev` runs it for
// a first look without a cluster; both find it with AssetsDir.
package controlplane

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Versions of the control plane that Build compiles; they are pinned in
// module/go.mod.txt.
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.8"
)

// recipe names the way Build compiles the binaries; it is part of the cache
// folder's name, so that binaries an older recipe built (kube-apiserver
// reporting v0.0.0-master, before the version was stamped) are built anew.
const recipe = "stamped"

// AssetsEnv names the environment variable that, when set, is the folder of
// ready-built control-plane binaries (envtest's convention).
const AssetsEnv = "KUBEBUILDER_ASSETS"

// CacheDirEnv names the environment variable that moves Windlass's cache
// folder.
const CacheDirEnv = "WINDLASS_CACHE_DIR"

// Binary is one program of the control plane and the Go package it is
// built from, relative to the build module.
type Binary struct {
	Name    string
	Package string
}

// Binaries are the programs Build compiles, in build order.
var Binaries = []Binary{
	{Name: "etcd", Package: "./etcd"},
	{Name: "kube-apiserver", Package: "k8s.io/kubernetes/cmd/kube-apiserver"},
	{Name: "kube-controller-manager", Package: "k8s.io/kubernetes/cmd/kube-controller-manager"},
}

// module holds the build module: go.mod, go.sum and the Go files, each
// with a .txt suffix so that the main module does not take them for its
// own.
//
//go:embed module
var module embed.FS

// CacheDir returns Windlass's cache folder: $WINDLASS_CACHE_DIR, else
// windlass under the user's cache folder ($XDG_CACHE_HOME or ~/.cache).
func CacheDir() (string, error) {
	if dir := os.Getenv(CacheDirEnv); dir != "" {
		return dir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache folder: %w (set %s)", err, CacheDirEnv)
	}
	return filepath.Join(dir, "windlass"), nil
}

// AssetsDir returns the folder the control plane is, or is to be, built
// into: $KUBEBUILDER_ASSETS when set, else a folder of the cache named by
// the versions and the platform.
func AssetsDir() (string, error) {
	if dir := os.Getenv(AssetsEnv); dir != "" {
		return dir, nil
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "controlplane", fmt.Sprintf("k8s-%s-etcd-%s-%s-%s-%s",
		KubernetesVersion, EtcdVersion, runtime.GOOS, runtime.GOARCH, recipe)), nil
}

// Missing returns the binaries that dir lacks.
func Missing(dir string) []Binary {
	var missing []Binary
	for _, b := range Binaries {
		if info, err := os.Stat(filepath.Join(dir, b.Name)); err != nil || info.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	return missing
}

// Progress is told about the build of each binary: once when it starts,
// and once when it ends (with its duration and error).
type Progress interface {
	Building(b Binary, index, total int)
	Built(b Binary, took time.Duration, err error)
}

// ErrNoGo says that Go is needed to build the control plane.
var ErrNoGo = errors.New("building the control plane needs Go (https://go.dev/dl/) on the PATH; " +
	"or set " + AssetsEnv + " to a folder holding etcd, kube-apiserver and kube-controller-manager")

// Build compiles the binaries that dir lacks into dir, with the go command,
// from the module this package carries. It reports each binary to
// progress, which may be nil.
func Build(ctx context.Context, dir string, progress Progress) error {
	missing := Missing(dir)
	if len(missing) == 0 {
		return nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return ErrNoGo
	}
	cache, err := CacheDir()
	if err != nil {
		return err
	}
	src := filepath.Join(cache, "controlplane", "src-k8s-"+KubernetesVersion+"-etcd-"+EtcdVersion)
	if err := writeModule(src); err != nil {
		return fmt.Errorf("writing the control plane's build module to %s: %w", src, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, b := range missing {
		if progress != nil {
			progress.Building(b, i+1, len(missing))
		}
		start := time.Now()
		err := buildBinary(ctx, goBin, src, dir, b)
		if progress != nil {
			progress.Built(b, time.Since(start), err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// buildBinary compiles b into dir, through a temporary file so that a
// build cut short never leaves a broken binary behind.
func buildBinary(ctx context.Context, goBin, src, dir string, b Binary) error {
	out := filepath.Join(dir, b.Name)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags="+ldflags(), "-o", out+".tmp", b.Package)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly")
	if output, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(out + ".tmp")
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("building %s from %s: %w\n%s", b.Name, b.Package, err, lastLines(string(output), 20))
	}
	return os.Rename(out+".tmp", out)
}

// ldflags strips the binaries and stamps the Kubernetes version into them,
// as the Kubernetes release build does: built from Go modules, kube-apiserver
// would otherwise report v0.0.0-master, which charts that require a
// kubeVersion (most public ones) refuse.
func ldflags() string {
	const pkg = "k8s.io/component-base/version"
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	return strings.Join([]string{"-s", "-w",
		"-X", pkg + ".gitVersion=" + KubernetesVersion,
		"-X", pkg + ".gitMajor=" + major,
		"-X", pkg + ".gitMinor=" + minor,
		"-X", pkg + ".gitTreeState=clean",
	}, " ")
}

// writeModule writes the embedded build module to dir, dropping the .txt
// suffixes.
func writeModule(dir string) error {
	return fs.WalkDir(module, "module", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := module.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dir, strings.TrimSuffix(strings.TrimPrefix(path, "module/"), ".txt"))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
