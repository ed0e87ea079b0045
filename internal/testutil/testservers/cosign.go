package testservers

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunCosign runs the cosign CLI in dir, offline: an empty key password
// (what `cosign generate-key-pair` then uses too), and a private HOME and
// TUF cache under dir. It returns the combined output.
func RunCosign(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(Cosign(t), args...)
	cmd.Dir = dir
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd.Env = serverEnv(home, "COSIGN_PASSWORD=", "TUF_ROOT="+filepath.Join(home, "tuf"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// SignWithKey signs the artifact ref (host/repo@sha256:hex) offline with
// the key pair cosign.key of dir, made by `cosign generate-key-pair` there:
// as a cosign v3 bundle, or as the legacy .sig tag of cosign v2.
func SignWithKey(t testing.TB, dir, ref string, legacy bool) {
	t.Helper()
	args := []string{"sign", "--yes", "--key", "cosign.key", "--tlog-upload=false", "--use-signing-config=false"}
	if legacy {
		args = append(args, "--new-bundle-format=false")
	}
	if out, err := RunCosign(t, dir, append(args, ref)...); err != nil {
		t.Fatalf("cosign sign %s: %v\n%s", ref, err, out)
	}
}

// GenerateKeyPair makes a cosign key pair, cosign.key and cosign.pub, in a
// new folder, and returns the folder and the public key.
func GenerateKeyPair(t testing.TB) (dir string, publicKey []byte) {
	t.Helper()
	dir = t.TempDir()
	if out, err := RunCosign(t, dir, "generate-key-pair"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(filepath.Join(dir, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, pub
}
