package conventions

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// logRules are the logging conventions, each a pattern no log call may
// match: messages start with a capital letter, "reason" is not a key (it
// is the event's and condition's word), and a kind used as a key is
// written as the kind is (GitRepository, not gitrepository).
var logRules = []struct {
	name    string
	pattern *regexp.Regexp
}{
	{"a message starts with a capital letter", logCall(`([^"]*, )?"[a-z]`)},
	{`"reason" is not a log key`, logCall(`.*, "reason", `)},
	{"a kind key is written as the kind", logCall(`.*, "(gitrepository|ocirepository|bucket|helmrepository|helmchart|kustomization|` +
		`helmrelease|imagerepository|imagepolicy|imageupdateautomation|receiver|alert|provider|gate|secret)", `)},
}

// logCall matches a call of a logger's Info or Error whose arguments
// match args: the receiver is a logger by its name (log, logger, Log,
// LoggerFrom(ctx), V(n)).
func logCall(args string) *regexp.Regexp {
	return regexp.MustCompile(`(\blog|\blogger|\.Log|LoggerFrom\(\w+\)|\.V\(\d\))\.(Info|Error)\(` + args)
}

// TestLogLinesFollowTheConventions scans the Go files of the tree (tests
// excepted) for log calls that break a rule.
func TestLogLinesFollowTheConventions(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("..", "..")
	var broken []string
	scanned := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for i, line := range strings.Split(string(data), "\n") {
			for _, rule := range logRules {
				if rule.pattern.MatchString(line) {
					broken = append(broken, filepath.ToSlash(path)+":"+strconv.Itoa(i+1)+": "+rule.name+": "+strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(scanned).To(BeNumerically(">", 500), "the scan sees the tree")
	g.Expect(broken).To(BeEmpty())
}
