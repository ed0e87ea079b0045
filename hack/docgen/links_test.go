package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the checkout's root, from this package's folder.
const repoRoot = "../.."

// TestMarkdownLinks checks every relative link of README.md and docs/: its
// file (or folder) exists, and so does its #anchor, a heading of the page
// it names. The documentation's pages are meant to be read as a site.
func TestMarkdownLinks(t *testing.T) {
	pages := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(data)) {
			checked++
			if err := checkLink(page, l, anchors); err != nil {
				rel, _ := filepath.Rel(repoRoot, page)
				t.Errorf("%s:%d: link %q: %v", rel, l.line, l.target, err)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d links found in %d pages: is the link pattern broken?", checked, len(pages))
	}
}

// link is one markdown link of a page.
type link struct {
	target string
	line   int
}

// linkPattern matches an inline link, [text](target) or [text](target "title").
var linkPattern = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// headingPattern matches an ATX heading, "## Title".
var headingPattern = regexp.MustCompile(`^#{1,6}\s+(.*)$`)

// codeSpan matches inline code, which holds no links.
var codeSpan = regexp.MustCompile("`[^`]*`")

// links returns the links of a markdown page, outside code.
func links(text string) []link {
	var out []link
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "``")
		for _, m := range linkPattern.FindAllStringSubmatch(line, -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// checkLink checks that the relative link l of page leads somewhere.
func checkLink(page string, l link, anchors map[string]map[string]bool) error {
	target := l.target
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := page
	if file != "" {
		if filepath.IsAbs(file) {
			return fmt.Errorf("absolute path: make it relative to the page")
		}
		path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no such file")
		}
	}
	if anchor == "" {
		return nil
	}
	if !strings.HasSuffix(path, ".md") {
		return fmt.Errorf("an anchor in a file that is not markdown")
	}
	if anchors[path] == nil {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		anchors[path] = headingAnchors(string(data))
	}
	if !anchors[path][anchor] {
		return fmt.Errorf("no heading with the anchor #%s", anchor)
	}
	return nil
}

// headingAnchors returns the anchors GitHub gives the headings of a page:
// lowercased, punctuation dropped, spaces made hyphens, and -1, -2, ...
// added to repeats.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := headingPattern.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		heading := strings.TrimSpace(m[1])
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			out[fmt.Sprintf("%s-%d", anchor, n)] = true
		} else {
			out[anchor] = true
		}
		seen[anchor]++
	}
	return out
}
