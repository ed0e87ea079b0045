package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// ParseImage parses the image of an ImageRepository, a repository such as
// "ghcr.io/org/app" or "nginx" (Docker Hub's library/nginx). It refuses a
// tag or a digest (the tags are what is scanned), a URL scheme and blanks,
// with an *InvalidSpecError that says what to write instead.
func ParseImage(image string) (name.Repository, error) {
	return parseImage(image, false)
}

// parseImage is ParseImage; with insecure, the registry is reached over
// plain HTTP when it does not speak HTTPS.
func parseImage(image string, insecure bool) (name.Repository, error) {
	if err := checkImage(image); err != nil {
		return name.Repository{}, invalidSpec("image", err)
	}
	repo, err := name.NewRepository(image, nameOptions(insecure)...)
	if err != nil {
		return name.Repository{}, invalidSpec("image", fmt.Errorf("%q is not an image repository: %v", image, err))
	}
	return repo, nil
}

// checkImage refuses the mistakes ParseImage explains itself.
func checkImage(image string) error {
	last := image[strings.LastIndex(image, "/")+1:]
	switch {
	case image == "":
		return errors.New("is empty: write a repository such as ghcr.io/org/app")
	case strings.TrimSpace(image) != image || strings.ContainsAny(image, " \t\r\n"):
		return fmt.Errorf("%q holds blanks", image)
	case strings.Contains(image, "://"):
		return fmt.Errorf("%q has a URL scheme: write the repository without it, such as ghcr.io/org/app", image)
	case strings.Contains(image, "@"):
		return fmt.Errorf("%q names a digest: write the repository only, such as ghcr.io/org/app", image)
	case strings.Contains(last, ":"):
		return fmt.Errorf("%q names a tag, or no repository: write the repository only, such as ghcr.io/org/app; its tags are what is scanned", image)
	}
	return nil
}

// CanonicalName returns the full name of repo, with its registry:
// "index.docker.io/library/nginx" for "nginx", "localhost:5000/app" for
// itself.
func CanonicalName(repo name.Repository) string {
	return repo.Name()
}

// parseTag parses the IMAGE:TAG reference of Digest; the tag is required
// (no "latest" by default).
func parseTag(ref string, insecure bool) (name.Tag, error) {
	colon := strings.LastIndex(ref, ":")
	if colon < 0 || strings.Contains(ref[colon:], "/") {
		return name.Tag{}, invalidSpec("image", fmt.Errorf("%q has no tag: write IMAGE:TAG", ref))
	}
	if err := checkImage(ref[:colon]); err != nil {
		return name.Tag{}, invalidSpec("image", err)
	}
	if !validTag(ref[colon+1:]) {
		return name.Tag{}, invalidSpec("image", fmt.Errorf("%q is not a valid tag", truncate(ref[colon+1:], 64)))
	}
	tag, err := name.NewTag(ref, nameOptions(insecure)...)
	if err != nil {
		return name.Tag{}, invalidSpec("image", fmt.Errorf("%q is not an image reference with a tag (IMAGE:TAG): %v", ref, err))
	}
	return tag, nil
}

// nameOptions returns the options of name parsing: defaults allowed
// (Docker Hub, library/), and plain HTTP with insecure.
func nameOptions(insecure bool) []name.Option {
	if insecure {
		return []name.Option{name.WeakValidation, name.Insecure}
	}
	return []name.Option{name.WeakValidation}
}
