package commitstatus

import (
	"fmt"
	"net/url"

	"github.com/windlass-dev/windlass/internal/notify"
	"github.com/windlass-dev/windlass/internal/redact"
)

// Repository is a repository on GitHub, GitLab or Gitea as the other
// forge providers (the pull request comment types) reach it: the address
// parsed as the commit-status types parse it, and the same credentials.
type Repository struct {
	// URL is the repository's API URL: <api>/repos/OWNER/REPO on GitHub
	// and Gitea, <api>/projects/<escaped path> on GitLab.
	URL string
	// Auth holds the headers that carry the Secret's token.
	Auth map[string]string
}

// repoAPI is a service that names its repository's API URL.
type repoAPI interface {
	repoURL() string
}

// ParseRepository reads cfg.Address as a repository of forge ("github",
// "gitlab" or "gitea") and cfg's token as its credentials; the errors are
// those of New.
func ParseRepository(forge string, cfg notify.Config) (Repository, error) {
	st, ok := serviceTypes[forge]
	if !ok {
		return Repository{}, fmt.Errorf("%q is not a forge", forge)
	}
	u, err := notify.CheckAddress(cfg.Address, cfg.AddressPolicy())
	if err != nil {
		return Repository{}, err
	}
	svc, err := st.parse(newURLParts(u))
	if err != nil {
		return Repository{}, fmt.Errorf("address %q: %w", redact.URL(cfg.Address), err)
	}
	api, ok := svc.(repoAPI)
	if !ok {
		return Repository{}, fmt.Errorf("%q is not a forge", forge)
	}
	auth, err := st.auth(cfg)
	if err != nil {
		return Repository{}, err
	}
	return Repository{URL: api.repoURL(), Auth: auth}, nil
}

func (s *github) repoURL() string { return s.api + "/repos" + escapePath(s.owner, s.repo) }

func (s *gitlab) repoURL() string { return s.api + "/projects/" + url.PathEscape(s.project) }

func (s *gitea) repoURL() string { return s.api + "/repos" + escapePath(s.owner, s.repo) }
