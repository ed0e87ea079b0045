package githubapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

const (
	// RenewBefore is how long before its expiry a cached token is renewed.
	RenewBefore = 5 * time.Minute
	// DefaultMaxEntries bounds the tokens that Shared holds.
	DefaultMaxEntries = 1000
	// requestTimeout bounds one token request.
	requestTimeout = 30 * time.Second
	// maxResponseBytes bounds the body of the API's answer.
	maxResponseBytes = 64 << 10
	// maxMessageLength bounds the API's message quoted in an error.
	maxMessageLength = 200
)

// Token is an installation access token.
type Token struct {
	// Value is the token.
	Value string
	// ExpiresAt is when GitHub stops accepting it.
	ExpiresAt time.Time
}

// TokenError is the API's refusal of a token request.
type TokenError struct {
	// URL is the token endpoint.
	URL string
	// Status is the HTTP status of the answer.
	Status int
	// Message is the API's explanation, with no credential in it.
	Message string
}

func (e *TokenError) Error() string {
	msg := fmt.Sprintf("the GitHub API refused the installation token request (POST %s): %d %s",
		e.URL, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Cache holds installation tokens in memory, keyed by the API base URL,
// the app, the installation and the private key, until RenewBefore their
// expiry; it holds at most a fixed number of them. It is safe for
// concurrent use: callers that want the same token while none is cached
// share one request.
type Cache struct {
	mu       sync.Mutex
	entries  map[string]Token
	max      int
	now      func() time.Time
	requests singleflight.Group
}

// NewCache returns an empty Cache of at most maxEntries tokens (at least
// one).
func NewCache(maxEntries int) *Cache {
	return &Cache{entries: map[string]Token{}, max: max(maxEntries, 1), now: time.Now}
}

// Shared is the process's cache: every GitRepository and every image
// update automation of the same installation and key use one token.
var Shared = NewCache(DefaultMaxEntries)

// Token returns a token of app's installation: the cached one while it is
// good for more than RenewBefore, else a new one requested with client.
func (c *Cache) Token(ctx context.Context, app *App, client *http.Client) (string, error) {
	key := app.cacheKey()
	if t, ok := c.cached(key); ok {
		return t.Value, nil
	}
	value, err, _ := c.requests.Do(key, func() (any, error) {
		if t, ok := c.cached(key); ok { // a request that just ended stored it
			return t.Value, nil
		}
		// The JWT is signed at the real time, which the API checks.
		t, err := Request(ctx, app, client, time.Now())
		if err != nil {
			return "", err
		}
		c.store(key, t, c.now())
		return t.Value, nil
	})
	return value.(string), err
}

// cached returns the token under key while it is fresh.
func (c *Cache) cached(key string) (Token, bool) {
	c.mu.Lock()
	t, ok := c.entries[key]
	c.mu.Unlock()
	return t, ok && fresh(t, c.now())
}

// Len returns how many tokens the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// fresh reports whether t is good for more than RenewBefore after now.
func fresh(t Token, now time.Time) bool {
	return now.Before(t.ExpiresAt.Add(-RenewBefore))
}

// store keeps t under key, unless it is already due for renewal; a full
// cache first lets go of the tokens due for renewal, or else of the one
// that expires first.
func (c *Cache) store(key string, t Token, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !fresh(t, now) {
		delete(c.entries, key)
		return
	}
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		c.evict(now)
	}
	c.entries[key] = t
}

// evict removes the tokens due for renewal; when there are none, the one
// that expires first. The caller holds c.mu.
func (c *Cache) evict(now time.Time) {
	first := ""
	for k, t := range c.entries {
		if !fresh(t, now) {
			delete(c.entries, k)
			continue
		}
		if first == "" || t.ExpiresAt.Before(c.entries[first].ExpiresAt) {
			first = k
		}
	}
	if len(c.entries) >= c.max {
		delete(c.entries, first)
	}
}

// Request asks the API for a new installation token of app, signing the
// JWT at time now. A refusal is a [*TokenError].
func Request(ctx context.Context, app *App, client *http.Client, now time.Time) (Token, error) {
	signed, err := app.JWT(now)
	if err != nil {
		return Token{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	endpoint := app.TokenURL()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, nil)
	if err != nil {
		return Token{}, fmt.Errorf("installation token request to %s: %w", endpoint, err)
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	// A redirect is answered as it is, not followed: Go would send the
	// JWT along to wherever it points.
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirects.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Token{}, fmt.Errorf("installation token request to %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return Token{}, fmt.Errorf("reading the answer of %s: %w", endpoint, err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return Token{}, &TokenError{URL: endpoint, Status: resp.StatusCode, Message: apiMessage(body, signed)}
	}
	var answer struct {
		Token     string    `json:"token"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &answer); err != nil || answer.Token == "" {
		return Token{}, fmt.Errorf("the answer of %s holds no installation token", endpoint)
	}
	return Token{Value: answer.Token, ExpiresAt: answer.ExpiresAt}, nil
}

// apiMessage returns the message of an error answer (GitHub's JSON
// "message", or the text), on one line and short, with the JWT removed
// should the server have quoted it.
func apiMessage(body []byte, signed string) string {
	var answer struct {
		Message string `json:"message"`
	}
	msg := string(body)
	if json.Unmarshal(body, &answer) == nil {
		msg = answer.Message
	}
	msg = strings.ReplaceAll(msg, signed, "[jwt]")
	msg = strings.Join(strings.Fields(strings.ToValidUTF8(msg, "")), " ")
	if r := []rune(msg); len(r) > maxMessageLength {
		msg = string(r[:maxMessageLength]) + "…"
	}
	return msg
}
