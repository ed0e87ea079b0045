//go:build !linux

package devenv

import "path/filepath"

// launchers returns the programs themselves outside Linux, where there is
// no parent-death signal to set.
func launchers(_, assets string) (map[string]string, error) {
	return map[string]string{"etcd": filepath.Join(assets, "etcd"), "kube-apiserver": filepath.Join(assets, "kube-apiserver")}, nil
}
