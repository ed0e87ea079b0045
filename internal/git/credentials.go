package git

import (
	"fmt"
	"net/url"
	"os"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Credentials returns the go-git credentials that the keys of a
// GitRepository's Secret (data) give for rawURL, checked as a clone checks
// them, for code that pushes as the controller would fetch, such as
// bootstrap. It returns nil credentials for data with none.
func Credentials(rawURL string, data map[string][]byte) (transport.AuthMethod, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q", SanitizeURL(rawURL))
	}
	var auth *AuthOptions
	if len(data) > 0 {
		if auth, err = NewAuthOptions(*u, data); err != nil {
			return nil, err
		}
	}
	c, err := NewClient(os.TempDir(), auth, nil)
	if err != nil {
		return nil, err
	}
	r, err := c.newRemote(rawURL)
	if err != nil {
		return nil, err
	}
	return r.auth, nil
}
