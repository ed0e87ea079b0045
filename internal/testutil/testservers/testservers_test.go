package testservers

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	. "github.com/onsi/gomega"
)

func TestDirIsTheFolderTheBuildScriptPrints(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(DirEnv, "")
	want, err := dirPath()
	g.Expect(err).NotTo(HaveOccurred())

	cmd := exec.Command("bash", "../../../hack/testservers.sh", "--print")
	cmd.Env = append(os.Environ(), DirEnv+"=")
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(out))).To(Equal(want),
		"the versions in this package and in hack/testservers/go.mod differ")
}

func TestDirSaysHowToBuildMissingServers(t *testing.T) {
	g := NewWithT(t)
	empty := t.TempDir()
	t.Setenv(DirEnv, empty)
	_, err := Dir()
	g.Expect(err).To(MatchError(And(
		ContainSubstring("the test servers are not built"),
		ContainSubstring(empty),
		ContainSubstring("run 'make testservers'"))))
}

func TestRegistryWithoutAuthTakesAPushAndServesItBack(t *testing.T) {
	g := NewWithT(t)
	reg := StartRegistry(t, RegistryOptions{})
	g.Expect(reg.URL()).To(HavePrefix("http://127.0.0.1:"))

	ref := mustRef(t, reg.Host+"/app:v1")
	img := mustImage(t)
	g.Expect(remote.Write(ref, img)).To(Succeed())
	expectServes(g, ref, img)
	g.Expect(filepath.Join(reg.StorageDir, "docker/registry/v2/repositories/app")).To(BeADirectory())
}

func TestRegistryWithBasicAuthRefusesWrongCredentials(t *testing.T) {
	g := NewWithT(t)
	reg := StartRegistry(t, RegistryOptions{Username: "flux", Password: "s3cr3t"})
	ref := mustRef(t, reg.Host+"/app:v1")
	img := mustImage(t)

	expectUnauthorized(g, remote.Write(ref, img))
	expectUnauthorized(g, remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "flux", Password: "wrong"})))

	auth := remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password})
	g.Expect(remote.Write(ref, img, auth)).To(Succeed())
	expectServes(g, ref, img, auth)
	_, err := remote.Get(ref)
	expectUnauthorized(g, err)
}

func TestRegistryOverTLSIsTrustedThroughItsCA(t *testing.T) {
	g := NewWithT(t)
	reg := StartRegistry(t, RegistryOptions{TLS: true, Username: "flux", Password: "s3cr3t"})
	g.Expect(reg.URL()).To(HavePrefix("https://127.0.0.1:"))
	g.Expect(string(reg.CAPEM)).To(HavePrefix("-----BEGIN CERTIFICATE-----"))
	ref := mustRef(t, reg.Host+"/app:v1")
	img := mustImage(t)
	auth := remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password})

	// The system's roots do not know the private CA.
	err := remote.Write(ref, img, auth)
	g.Expect(err).To(MatchError(ContainSubstring("certificate")))

	tlsConfig, err := ClientTLSConfig(reg.CAPEM)
	g.Expect(err).NotTo(HaveOccurred())
	trusting := remote.WithTransport(&http.Transport{TLSClientConfig: tlsConfig})
	g.Expect(remote.Write(ref, img, auth, trusting)).To(Succeed())
	expectServes(g, ref, img, auth, trusting)

	resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}).Get(reg.URL() + "/v2/")
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func mustImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// expectServes expects the registry to serve img at ref.
func expectServes(g Gomega, ref name.Reference, img v1.Image, opts ...remote.Option) {
	want, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Get(ref, opts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc.Digest).To(Equal(want))
}

// expectUnauthorized expects err to be the registry's 401.
func expectUnauthorized(g Gomega, err error) {
	var terr *transport.Error
	g.Expect(errors.As(err, &terr)).To(BeTrue(), "want a registry error, got %v", err)
	g.Expect(terr.StatusCode).To(Equal(http.StatusUnauthorized))
}

func TestHelmIsTheVersionBothModulesPin(t *testing.T) {
	g := NewWithT(t)
	for _, mod := range []string{"../../../hack/testservers/go.mod", "../../../go.mod"} {
		data, err := os.ReadFile(mod)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(data)).To(MatchRegexp(`(?m)^\s*(require\s+)?helm\.sh/helm/v4 `+HelmVersion+`(\s|$)`),
			"%s pins another helm than HelmVersion: the CLI of the tests must be the SDK's version", mod)
	}
}

func TestHelmCLIRuns(t *testing.T) {
	g := NewWithT(t)
	cmd := exec.Command(Helm(t), "version", "--template", "{{.GoVersion}}")
	cmd.Env = serverEnv(t.TempDir())
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(HavePrefix("go1."))
}
