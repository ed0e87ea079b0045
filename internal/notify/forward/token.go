package forward

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// InClusterTokenFile is where Kubernetes mounts a pod's service-account
// token.
const InClusterTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// DefaultTokenMaxAge is how long a TokenFile keeps a token read without
// reading the file again, even when the file looks unchanged.
const DefaultTokenMaxAge = 5 * time.Minute

// TokenSource gives a Poster the service-account token it authenticates
// with.
type TokenSource interface {
	// Token returns the current token.
	Token() (string, error)
}

// StaticToken is a token that does not change, such as a kubeconfig's.
type StaticToken string

// Token implements TokenSource.
func (t StaticToken) Token() (string, error) { return string(t), nil }

// fileStamp tells whether a file changed.
type fileStamp struct {
	modTime time.Time
	size    int64
}

// TokenFile is a token in a file that is rotated, such as a projected
// service-account token: the file is read again when it changes (its
// modification time or size) and at least every MaxAge.
type TokenFile struct {
	// Path is the file.
	Path string
	// MaxAge is DefaultTokenMaxAge when zero.
	MaxAge time.Duration

	mu     sync.Mutex
	token  string
	stamp  fileStamp
	readAt time.Time
}

// Token implements TokenSource. Its errors name the file, never its
// content.
func (f *TokenFile) Token() (string, error) {
	info, err := os.Stat(f.Path)
	if err != nil {
		return "", fmt.Errorf("reading the service-account token: %w", err)
	}
	stamp := fileStamp{modTime: info.ModTime(), size: info.Size()}
	maxAge := f.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultTokenMaxAge
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token != "" && stamp == f.stamp && time.Since(f.readAt) < maxAge {
		return f.token, nil
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return "", fmt.Errorf("reading the service-account token: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the service-account token file %s is empty", f.Path)
	}
	f.token, f.stamp, f.readAt = token, stamp, time.Now()
	return token, nil
}

// TokenFromConfig returns the token that cfg authenticates with, for a
// Poster: its BearerTokenFile, read again as it rotates; else its
// BearerToken; else the pod's service-account token (InClusterTokenFile)
// when there is one. It returns nil when there is none.
func TokenFromConfig(cfg *rest.Config) TokenSource {
	return tokenFromConfig(cfg, InClusterTokenFile)
}

func tokenFromConfig(cfg *rest.Config, inCluster string) TokenSource {
	switch {
	case cfg != nil && cfg.BearerTokenFile != "":
		return &TokenFile{Path: cfg.BearerTokenFile}
	case cfg != nil && cfg.BearerToken != "":
		return StaticToken(cfg.BearerToken)
	}
	if _, err := os.Stat(inCluster); err == nil {
		return &TokenFile{Path: inCluster}
	}
	return nil
}
