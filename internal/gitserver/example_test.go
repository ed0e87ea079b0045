package gitserver_test

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/windlass-dev/windlass/internal/gitserver"
)

// A non-test program (a demo, an end-to-end harness) uses New and Stop
// directly; tests use NewForTest.
func ExampleNew() {
	root, err := os.MkdirTemp("", "repos-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)

	s, err := gitserver.New(root)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Stop()

	repo, err := s.InitRepo("podinfo.git", "main")
	if err != nil {
		log.Fatal(err)
	}
	sha, err := repo.Commit("main", map[string]string{"kustomization.yaml": "resources: []\n"}, "initial")
	if err != nil {
		log.Fatal(err)
	}
	if err := repo.Tag("v1.0.0", sha); err != nil {
		log.Fatal(err)
	}
	baseURL, err := s.StartHTTP()
	if err != nil {
		log.Fatal(err)
	}

	out, err := s.GitCommand(root, "ls-remote", baseURL+"/"+repo.Name()).Output()
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		fmt.Println(fields[0] == sha, fields[1])
	}
	// Output:
	// true HEAD
	// true refs/heads/main
	// true refs/tags/v1.0.0
}
