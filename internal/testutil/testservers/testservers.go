// Package testservers runs real test servers on the loopback interface for
// Windlass's tests: the reference OCI registry (distribution) with optional
// basic auth and TLS, an S3 gateway over a folder that checks SigV4
// credentials (versitygw), the cosign CLI for signing images, the helm
// CLI for releases made by another tool than Windlass, an OpenID provider
// (zitadel/oidc's example server) for sign-ins, and Prometheus, which
// scrapes metrics and evaluates alerting rules, with promtool to check and
// unit-test rules.
//
// The servers are Go programs built once, by `make testservers`
// (hack/testservers.sh), from the module in hack/testservers (Prometheus and
// promtool from their own, hack/testservers/prometheus) into a folder of the
// user's cache keyed by their versions; Dir finds that folder, and
// $WINDLASS_TESTSERVERS overrides it. Every server runs as a child process
// that the kernel kills with the test binary, with its output captured and
// logged when the test fails.
//
//	reg := testservers.StartRegistry(t, testservers.RegistryOptions{Username: "u", Password: "p", TLS: true})
//	// push to reg.Host + "/app:v1" trusting reg.CAPEM
//	s3 := testservers.StartS3(t, testservers.S3Options{})
//	// put objects into s3.Bucket at s3.URL() with s3.AccessKey and s3.SecretKey
//	prom := testservers.StartPrometheus(t, testservers.PrometheusOptions{
//		Targets: []testservers.PrometheusTarget{{Job: "windlass", Addr: metricsAddr}},
//		Rules:   [][]byte{alertRules},
//	})
//	prom.WaitScraped(t, "windlass")
//	// prom.Query(ctx, `up`), prom.Alerts(ctx); testservers.Promtool(t) for `promtool test rules`
package testservers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/windlass-dev/windlass/internal/controlplane"
	"github.com/windlass-dev/windlass/internal/testutil/childproc"
)

// Versions of the test servers; hack/testservers/go.mod pins them, and
// hack/testservers.sh names the cache folder after them.
const (
	RegistryVersion  = "v3.1.2"
	VersityGWVersion = "v1.8.0"
	CosignVersion    = "v3.1.3"
	// HelmVersion is the helm CLI's; its binary is named after it
	// (helm-<version>), so that a new version is built alone.
	HelmVersion = "v4.2.4"
	// OIDCProviderVersion is zitadel/oidc's, whose example OpenID provider
	// serves sign-ins; its binary is named after it.
	OIDCProviderVersion = "v3.52.0"
	// PrometheusVersion is the Go module version of Prometheus (v0.316.0
	// is Prometheus 3.16.0), which hack/testservers/prometheus/go.mod
	// pins apart from the others; the prometheus and promtool binaries are
	// named after it.
	PrometheusVersion = "v0.316.0"
)

// DirEnv names the environment variable that, when set, is the folder of
// ready-built test servers.
const DirEnv = "WINDLASS_TESTSERVERS"

// Names of the binaries in Dir.
const (
	registryBinary   = "registry"
	versitygwBinary  = "versitygw"
	cosignBinary     = "cosign"
	helmBinary       = "helm-" + HelmVersion
	oidcBinary       = "oidc-provider-" + OIDCProviderVersion
	prometheusBinary = "prometheus-" + PrometheusVersion
	promtoolBinary   = "promtool-" + PrometheusVersion
)

// binaries are the programs that Dir must hold.
var binaries = []string{registryBinary, versitygwBinary, cosignBinary, helmBinary, oidcBinary,
	prometheusBinary, promtoolBinary}

// startTimeout bounds how long a server may take to answer after start.
const startTimeout = 30 * time.Second

// Dir returns the folder of the built test servers: $WINDLASS_TESTSERVERS
// when set, else a folder of Windlass's cache named by the versions and the
// platform. It fails when a binary is missing there.
func Dir() (string, error) {
	dir, err := dirPath()
	if err != nil {
		return "", err
	}
	for _, name := range binaries {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("the test servers are not built (%s has no %s): run 'make testservers'", dir, name)
		}
	}
	return dir, nil
}

// dirPath returns the folder the test servers are, or are to be, built into.
func dirPath() (string, error) {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir, nil
	}
	cache, err := controlplane.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "testservers", fmt.Sprintf("registry-%s-versitygw-%s-cosign-%s-%s-%s",
		RegistryVersion, VersityGWVersion, CosignVersion, runtime.GOOS, runtime.GOARCH)), nil
}

// binary returns the path of the named test server, failing t when the
// servers are not built.
func binary(t testing.TB, name string) string {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// Cosign returns the path of the cosign binary, failing t when the test
// servers are not built.
func Cosign(t testing.TB) string {
	t.Helper()
	return binary(t, cosignBinary)
}

// Helm returns the path of the helm CLI binary, failing t when the test
// servers are not built.
func Helm(t testing.TB) string {
	t.Helper()
	return binary(t, helmBinary)
}

// start runs cmd as a child process that dies with the test binary, stops
// it when t ends, and logs its output when t fails.
func start(t testing.TB, name string, cmd *exec.Cmd) *childproc.Process {
	t.Helper()
	p, err := childproc.Start(cmd)
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	t.Cleanup(func() {
		if !p.Exited() {
			_ = p.Terminate(5 * time.Second)
		}
	})
	return p
}

// waitHTTP waits until GET url answers with any status below 500, failing
// t at once if p exits first.
func waitHTTP(t testing.TB, name string, p *childproc.Process, url string, tlsConfig *tls.Config) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var last string
	for {
		if p.Exited() {
			t.Fatalf("%s exited before %s answered: %v\n%s", name, url, p.Err(), lastLines(p.Output(), 30))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not answer GET %s within %s: %s", name, url, startTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	addrs, err := childproc.FreeAddrs(1)
	if err != nil {
		t.Fatal(err)
	}
	return addrs[0]
}

// serverEnv is the environment of a server: this process's, without
// proxies (the servers are on loopback) and with a private HOME.
func serverEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HOME", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+home), extra...)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
