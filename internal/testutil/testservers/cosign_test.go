package testservers

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
)

func TestCosignSignsOfflineWithAKeyAndVerifies(t *testing.T) {
	reg := StartRegistry(t, RegistryOptions{})
	keys := t.TempDir()
	cosign(t, keys, "generate-key-pair")
	other := t.TempDir()
	cosign(t, other, "generate-key-pair")

	for _, tc := range []struct {
		name string
		args []string
		// tag is where the signature lands, from the image digest's hex:
		// the referrers tag schema (the registry has no referrers API) or
		// cosign's legacy .sig tag.
		tag func(hex string) string
	}{
		{name: "bundle", tag: func(hex string) string { return "sha256-" + hex }},
		{name: "legacy", args: []string{"--new-bundle-format=false"}, tag: func(hex string) string { return "sha256-" + hex + ".sig" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := reg.Host + "/" + tc.name
			ref := mustRef(t, repo+":v1")
			img := mustImage(t)
			g.Expect(remote.Write(ref, img)).To(Succeed())
			digest, err := img.Digest()
			g.Expect(err).NotTo(HaveOccurred())
			signed := repo + "@" + digest.String()

			out, err := cosignErr(t, keys, "verify", "--key", "cosign.pub", "--insecure-ignore-tlog=true", signed)
			g.Expect(err).To(HaveOccurred(), "an unsigned image verified")
			g.Expect(out).To(ContainSubstring("no signatures found"))

			args := append([]string{"sign", "--yes", "--key", "cosign.key",
				"--tlog-upload=false", "--use-signing-config=false"}, tc.args...)
			cosign(t, keys, append(args, signed)...)

			tags, err := remote.List(mustRepo(t, repo))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tags).To(ContainElement(tc.tag(digest.Hex)))

			cosign(t, keys, "verify", "--key", "cosign.pub", "--insecure-ignore-tlog=true", signed)
			out, err = cosignErr(t, keys, "verify", "--key", filepath.Join(other, "cosign.pub"),
				"--insecure-ignore-tlog=true", signed)
			g.Expect(err).To(HaveOccurred(), "verified with another key:\n%s", out)
			g.Expect(out).To(Or(ContainSubstring("failed to verify signature"), ContainSubstring("invalid signature")))
		})
	}
}

func mustRepo(t *testing.T, s string) name.Repository {
	t.Helper()
	repo, err := name.NewRepository(s)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// cosign runs the cosign CLI in dir and fails t unless it succeeds.
func cosign(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := cosignErr(t, dir, args...)
	if err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// cosignErr runs the cosign CLI in dir (see RunCosign).
func cosignErr(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	return RunCosign(t, dir, args...)
}
