package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// cliDocs is the folder of the generated pages, from this package's folder.
const cliDocs = "../../docs/cli"

// TestCLIDocsAreCurrent fails when docs/cli is not what `make docs` writes:
// a command, flag or help text changed without the pages.
func TestCLIDocsAreCurrent(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(cliDocs, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		have[name] = true
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		page, ok := want[name]
		switch {
		case !ok:
			t.Errorf("docs/cli/%s is no command's page: run make docs", name)
		case !bytes.Equal(got, page):
			t.Errorf("docs/cli/%s is stale: run make docs", name)
		}
	}
	var missing []string
	for name := range want {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		t.Errorf("docs/cli/%s is missing: run make docs", name)
	}
}

// TestRenderIsDeterministic checks that two renderings are the same, so
// that the pages do not change from one run of make docs to the next.
func TestRenderIsDeterministic(t *testing.T) {
	a, err := render()
	if err != nil {
		t.Fatal(err)
	}
	b, err := render()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d pages, then %d", len(a), len(b))
	}
	for name, page := range a {
		if !bytes.Equal(page, b[name]) {
			t.Errorf("%s differs between two renderings", name)
		}
	}
	if _, ok := a["windlass.md"]; !ok {
		t.Error("no page for the root command")
	}
}
