package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/windlass-dev/windlass/internal/oci"
)

// ScanResult is what a scan found, for the ImageRepository's
// status.lastScanResult.
type ScanResult struct {
	// Revision is "sha256:" and the hex SHA-256 of the stored tags file:
	// the tags, excluded ones left out, in byte order, each followed by a
	// line feed. It depends on the set of tags only.
	Revision string
	// TagCount is how many tags are stored.
	TagCount int
	// LatestTags are the greatest tags, at most 10, in reverse byte
	// order.
	LatestTags []string
	// ScanTime is when the scan ended.
	ScanTime time.Time
	// Changed tells whether the stored files were rewritten; false when
	// the registry listed the tags already stored for the same image.
	Changed bool
}

// maxLatestTags is how many tags ScanResult.LatestTags holds at most.
const maxLatestTags = 10

// Scan lists the tags of opts.Image and stores them for the
// ImageRepository namespace/name. The tags come page by page and go
// through to disk as they come, so memory does not grow with their
// number: they are compared line by line with the stored list, and only
// when they first differ is a temporary file started (with the stored
// lines that matched so far); it replaces the stored list atomically once
// the listing is complete. A list that did not change writes nothing.
//
// Registries list tags in byte order (the distribution spec); a registry
// that does not is handled by an external sort (runs of 10 000 tags
// merged from disk), so the stored order and the revision never depend
// on the registry's order.
//
// A failed scan leaves the stored list as it was. Errors are
// *InvalidSpecError for a wrong spec, classified by IsAuthError and
// IsNotFound, and never hold a credential.
func (s *Store) Scan(ctx context.Context, namespace, name string, opts Options) (ScanResult, error) {
	dir, err := s.repoDir(namespace, name)
	if err != nil {
		return ScanResult{}, err
	}
	repo, err := parseImage(opts.Image, opts.Insecure)
	if err != nil {
		return ScanResult{}, err
	}
	filter, err := newTagFilter(opts.Exclusions, opts.maxTags())
	if err != nil {
		return ScanResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.timeout())
	defer cancel()
	conn, err := opts.connect(ctx, repo)
	if err != nil {
		return ScanResult{}, err
	}
	defer conn.close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ScanResult{}, fmt.Errorf("creating the tag store of %s/%s: %w", namespace, name, err)
	}
	list, err := conn.storeTags(ctx, repo, dir, filter)
	if err != nil {
		return ScanResult{}, err
	}
	defer list.discard()
	changed, err := s.commit(dir, meta{Image: CanonicalName(repo), Revision: list.revision, Count: list.count}, list.path)
	if err != nil {
		return ScanResult{}, fmt.Errorf("storing the tags of %s/%s: %w", namespace, name, err)
	}
	return ScanResult{Revision: list.revision, TagCount: list.count, LatestTags: list.latest,
		ScanTime: time.Now(), Changed: changed}, nil
}

// storeTags lists the tags of repo into a tagWriter of dir and returns
// the finished list.
func (c *connection) storeTags(ctx context.Context, repo name.Repository, dir string, filter *tagFilter) (tagList, error) {
	w, err := newTagWriter(dir)
	if err != nil {
		return tagList{}, err
	}
	defer func() { w.discard() }()
	sorted := true
	err = c.listTags(ctx, repo, filter, func(tag string) error {
		if sorted && w.count > 0 && tag < w.prev {
			sorted = false
			if err := w.diverge(); err != nil {
				return err
			}
		}
		return w.add(tag)
	})
	if err != nil {
		return tagList{}, err
	}
	if !sorted {
		next, err := w.sorted()
		if err != nil {
			return tagList{}, err
		}
		w = next
	}
	return w.finish()
}

// listTags lists the tags of repo page by page and hands each tag that
// filter keeps to add.
func (c *connection) listTags(ctx context.Context, repo name.Repository, filter *tagFilter, add func(string) error) error {
	what := "listing the tags of " + repo.Name()
	puller, err := remote.NewPuller(c.remote...)
	if err != nil {
		return c.scrub.fail(what, err, c.timeout)
	}
	lister, err := puller.Lister(ctx, repo)
	if err != nil {
		return c.scrub.fail(what, err, c.timeout)
	}
	for lister.HasNext() {
		page, err := lister.Next(ctx)
		if err != nil {
			return c.scrub.fail(what, err, c.timeout)
		}
		if len(page.Tags) == 0 && page.Next != "" {
			return errors.New(what + ": the registry sent an empty page that links to a next one")
		}
		if err := oci.CheckNextPage(repo, page.Next); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for _, tag := range page.Tags {
			keep, err := filter.keep(tag)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			if !keep {
				continue
			}
			if err := add(tag); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
	}
	return nil
}

// tagFilter checks the tags a registry lists: their number, their form,
// and the exclusions.
type tagFilter struct {
	exclusions []*regexp.Regexp
	max, seen  int
}

// newTagFilter compiles the exclusions (nil means DefaultExclusions);
// a faulty one is an *InvalidSpecError.
func newTagFilter(exclusions []string, maxTags int) (*tagFilter, error) {
	if exclusions == nil {
		exclusions = DefaultExclusions
	}
	f := &tagFilter{max: maxTags}
	for i, expr := range exclusions {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, invalidSpec(fmt.Sprintf("exclusionList[%d]", i), fmt.Errorf("%q is not a regular expression: %v", expr, err))
		}
		f.exclusions = append(f.exclusions, re)
	}
	return f, nil
}

// keep counts tag and tells whether it is stored: an error when the
// registry listed more than max tags or a malformed one, false when an
// exclusion matches.
func (f *tagFilter) keep(tag string) (bool, error) {
	f.seen++
	if f.seen > f.max {
		return false, fmt.Errorf("the registry lists more than %d tags, the most a scan stores (maxTags); nothing was stored", f.max)
	}
	if !validTag(tag) {
		return false, fmt.Errorf("the registry listed %q, which is not a valid tag", truncate(tag, 64))
	}
	for _, re := range f.exclusions {
		if re.MatchString(tag) {
			return false, nil
		}
	}
	return true, nil
}

// validTag tells whether tag has the form of the distribution spec,
// [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}: in particular it holds no line
// feed, the separator of the tags file.
func validTag(tag string) bool {
	if tag == "" || len(tag) > 128 {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// truncate returns s cut to n bytes, with "..." when it was longer.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
