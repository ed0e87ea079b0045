package chart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// chartRepo is a real HTTP chart server on loopback and a Fetcher for it
// that records its calls.
type chartRepo struct {
	url   string
	mu    sync.Mutex
	calls []string
}

// newChartRepo serves packages (file name → .tgz bytes) under /charts/.
func newChartRepo(t *testing.T, packages map[string][]byte) *chartRepo {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := packages[strings.TrimPrefix(r.URL.Path, "/charts/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return &chartRepo{url: srv.URL + "/charts"}
}

// fetch downloads <repoURL>/<name>-1.0.0.tgz.
func (c *chartRepo) fetch(ctx context.Context, repoURL, name, versionRange string) ([]byte, error) {
	c.mu.Lock()
	c.calls = append(c.calls, fmt.Sprintf("%s %s %s", repoURL, name, versionRange))
	c.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, repoURL+"/"+name+"-1.0.0.tgz", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", resp.Request.URL.Path, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, DefaultMaxChartSize+1))
}

// depNames lists the names and versions of ch's subcharts.
func depNames(ch *chart.Chart) []string {
	var out []string
	for _, d := range ch.Dependencies() {
		out = append(out, d.Name()+"@"+d.Metadata.Version)
	}
	return out
}

func TestResolveDependencies(t *testing.T) {
	repo := newChartRepo(t, map[string][]byte{"remote-1.0.0.tgz": tarGz(t, chartEntries("remote", "1.0.0")...)})
	tests := []struct {
		name      string
		setup     func(t *testing.T, root, outside string)
		noFetch   bool
		wantErr   string
		wantDeps  []string
		wantCalls []string
		check     func(g Gomega, err error)
	}{{
		name: "file:// dependency inside the root",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib|^0.2|file://../lib"))
			writeTree(t, root, chartFiles("lib", "lib", "0.2.1"))
		},
		wantDeps: []string{"lib@0.2.1"},
	}, {
		name: "file:// dependency with its own file:// dependency",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||file://../libs/lib"))
			writeTree(t, root, chartFiles("libs/lib", "lib", "0.1.0", "base||file://../base"))
			writeTree(t, root, chartFiles("libs/base", "base", "0.1.0"))
		},
		wantDeps: []string{"lib@0.1.0"},
	}, {
		name: "file:// dependency on a package file",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "pkg||file://../dist/pkg-1.0.0.tgz"))
			writeTree(t, root, map[string]string{"dist/pkg-1.0.0.tgz": string(tarGz(t, chartEntries("pkg", "1.0.0")...))})
		},
		wantDeps: []string{"pkg@1.0.0"},
	}, {
		name: "file:// dependency outside the root",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||file://../../outside/lib"))
		},
		wantErr: `dependency "lib": repository "file://../../outside/lib": "../outside/lib" leads outside the source root`,
	}, {
		name: "file:// dependency with an absolute path",
		setup: func(t *testing.T, root, outside string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||file://"+filepath.Join(outside, "lib")))
		},
		wantErr: "must be a relative file:// path",
	}, {
		name: "file:// dependency through a symlink out of the root",
		setup: func(t *testing.T, root, outside string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||file://../link"))
			symlink(t, root, "link", filepath.Join(outside, "lib"))
		},
		wantErr: "path escapes from parent",
	}, {
		name: "file:// dependency with a version that does not match",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib|^1.0.0|file://../lib"))
			writeTree(t, root, chartFiles("lib", "lib", "0.2.1"))
		},
		wantErr: `version 0.2.1 does not satisfy "^1.0.0"`,
	}, {
		name: "file:// dependency with another name",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||file://../lib"))
			writeTree(t, root, chartFiles("lib", "other", "0.2.1"))
		},
		wantErr: `resolved to a chart named "other"`,
	}, {
		name: "file:// dependencies in a cycle",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "a||file://../a"))
			writeTree(t, root, chartFiles("a", "a", "1.0.0", "b||file://../b"))
			writeTree(t, root, chartFiles("b", "b", "1.0.0", "a||file://../a"))
		},
		wantErr: "nest more than",
	}, {
		name: "vendored dependency is kept and not fetched",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "remote|1.x|https://example.invalid/charts"))
			writeTree(t, root, map[string]string{"app/charts/remote-0.9.0.tgz": string(tarGz(t, chartEntries("remote", "0.9.0")...))})
		},
		wantDeps: []string{"remote@0.9.0"},
	}, {
		name:    "remote dependency without a fetcher",
		noFetch: true,
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "remote|~1.0|https://user:s3cret@charts.example.com/stable?token=t0ken"))
		},
		check: func(g Gomega, err error) {
			var remote *RemoteDependencyError
			g.Expect(errors.As(err, &remote)).To(BeTrue())
			g.Expect(*remote).To(Equal(RemoteDependencyError{Name: "remote", Version: "~1.0", Repository: "https://charts.example.com/stable"}))
			g.Expect(err.Error()).NotTo(Or(ContainSubstring("s3cret"), ContainSubstring("t0ken")))
		},
	}, {
		name: "remote dependency fetched from a chart server",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "remote|~1.0|"+repo.url))
		},
		wantDeps:  []string{"remote@1.0.0"},
		wantCalls: []string{repo.url + " remote ~1.0"},
	}, {
		name: "remote dependency the server does not have",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "absent||"+repo.url))
		},
		wantErr:   `fetching dependency "absent"`,
		wantCalls: []string{repo.url + " absent "},
	}, {
		name: "dependency without repository that is not vendored",
		setup: func(t *testing.T, root, _ string) {
			writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||"))
		},
		wantErr: `dependency "lib" has no repository`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			base := t.TempDir()
			root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
			g.Expect(os.MkdirAll(root, 0o755)).To(Succeed())
			writeTree(t, outside, chartFiles("lib", "lib", "0.2.1"))
			tt.setup(t, root, outside)
			ch, err := LoadDir(root, "app", Limits{})
			g.Expect(err).NotTo(HaveOccurred())

			repo.calls = nil
			var fetch Fetcher = repo.fetch
			if tt.noFetch {
				fetch = nil
			}
			err = ResolveDependencies(context.Background(), root, "app", ch, Limits{}, fetch)
			g.Expect(repo.calls).To(Equal(tt.wantCalls))
			switch {
			case tt.check != nil:
				tt.check(g, err)
			case tt.wantErr != "":
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			default:
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(depNames(ch)).To(ConsistOf(tt.wantDeps))
			}
		})
	}
}

func TestResolveDependenciesNested(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeTree(t, root, chartFiles("app", "app", "1.0.0", "lib||file://../libs/lib"))
	writeTree(t, root, chartFiles("libs/lib", "lib", "0.1.0", "base||file://../base"))
	writeTree(t, root, chartFiles("libs/base", "base", "0.3.0"))
	ch, err := LoadDir(root, "app", Limits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ResolveDependencies(context.Background(), root, "app", ch, Limits{}, nil)).To(Succeed())
	g.Expect(depNames(ch)).To(Equal([]string{"lib@0.1.0"}))
	g.Expect(depNames(ch.Dependencies()[0])).To(Equal([]string{"base@0.3.0"}))
}

func TestRedactURL(t *testing.T) {
	tests := map[string]string{
		"https://charts.example.com/stable":                "https://charts.example.com/stable",
		"https://u:p@charts.example.com/stable?sig=x#frag": "https://charts.example.com/stable",
		"oci://ghcr.io/org/charts":                         "oci://ghcr.io/org/charts",
		"@stable":                                          "@stable",
		"https://u:p@bad host/x?sig=secret":                "https://bad host/x",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			NewWithT(t).Expect(redactURL(in)).To(Equal(want))
		})
	}
}
