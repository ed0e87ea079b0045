package githubapp

import (
	"context"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/gomega"

	"github.com/windlass-dev/windlass/internal/testutil/githubapi"
)

var (
	keysOnce       sync.Once
	appKey, other  *rsa.PrivateKey
	appPEM, othPEM []byte
)

// keys returns the app's key and another one, generated once.
func keys(t *testing.T) (*rsa.PrivateKey, []byte, []byte) {
	keysOnce.Do(func() {
		appKey, appPEM = githubapi.NewKey(t)
		other, othPEM = githubapi.NewKey(t)
	})
	return appKey, appPEM, othPEM
}

func secretData(pemKey []byte, base string) map[string][]byte {
	d := map[string][]byte{KeyAppID: []byte("42"), KeyInstallationID: []byte("7"), KeyPrivateKey: pemKey}
	if base != "" {
		d[KeyBaseURL] = []byte(base)
	}
	return d
}

func TestFromSecret(t *testing.T) {
	_, pemKey, _ := keys(t)
	with := func(k, v string) map[string][]byte {
		d := secretData(pemKey, "")
		if v == "" {
			delete(d, k)
		} else {
			d[k] = []byte(v)
		}
		return d
	}
	tests := []struct {
		name    string
		data    map[string][]byte
		wantKey string
		wantURL string
	}{
		{name: "github.com", data: secretData(pemKey, ""), wantURL: "https://api.github.com/app/installations/7/access_tokens"},
		{name: "enterprise", data: secretData(pemKey, "https://ghe.example.com/api/v3/"), wantURL: "https://ghe.example.com/api/v3/app/installations/7/access_tokens"},
		{name: "no app id", data: with(KeyAppID, ""), wantKey: KeyAppID},
		{name: "no installation id", data: with(KeyInstallationID, ""), wantKey: KeyInstallationID},
		{name: "no private key", data: with(KeyPrivateKey, ""), wantKey: KeyPrivateKey},
		{name: "installation id not a number", data: with(KeyInstallationID, "7/../../user"), wantKey: KeyInstallationID},
		{name: "app id with spaces", data: with(KeyAppID, "4 2"), wantKey: KeyAppID},
		{name: "private key not pem", data: with(KeyPrivateKey, "s3cr3t-not-a-key"), wantKey: KeyPrivateKey},
		{name: "base url not http", data: with(KeyBaseURL, "ftp://ghe.example.com"), wantKey: KeyBaseURL},
		{name: "base url with user", data: with(KeyBaseURL, "https://u:p@ghe.example.com"), wantKey: KeyBaseURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			app, err := FromSecret(tt.data)
			if tt.wantKey == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(app.TokenURL()).To(Equal(tt.wantURL))
				return
			}
			var invalid *InvalidSecretError
			g.Expect(errors.As(err, &invalid)).To(BeTrue())
			g.Expect(invalid.Key).To(Equal(tt.wantKey))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantKey))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
			g.Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
		})
	}
}

func TestApp_JWT(t *testing.T) {
	g := NewWithT(t)
	key, pemKey, _ := keys(t)
	app, err := FromSecret(secretData(pemKey, ""))
	g.Expect(err).NotTo(HaveOccurred())
	now := time.Now()
	signed, err := app.JWT(now)
	g.Expect(err).NotTo(HaveOccurred())

	var claims jwt.RegisteredClaims
	_, err = jwt.ParseWithClaims(signed, &claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claims.Issuer).To(Equal("42"))
	g.Expect(claims.IssuedAt.Time).To(BeTemporally("<", now))
	g.Expect(claims.ExpiresAt.Time).To(BeTemporally(">", now))
	g.Expect(claims.ExpiresAt.Sub(claims.IssuedAt.Time)).To(BeNumerically("<=", 10*time.Minute))
}

// newAPI serves the app's installation with tokens of ttl.
func newAPI(t *testing.T, prefix string, ttl time.Duration) *githubapi.Server {
	key, _, _ := keys(t)
	return githubapi.NewForTest(t, githubapi.Options{AppID: "42", InstallationID: "7",
		PublicKey: &key.PublicKey, PathPrefix: prefix, TokenTTL: ttl})
}

func TestCache_Token(t *testing.T) {
	_, pemKey, otherPEM := keys(t)
	tests := []struct {
		name       string
		prefix     string
		ttl        time.Duration
		key        []byte
		calls      int
		wantIssued int64
		wantErr    string
	}{
		{name: "one token for several calls", ttl: time.Hour, key: pemKey, calls: 3, wantIssued: 1},
		{name: "enterprise path prefix", prefix: "/api/v3", ttl: time.Hour, key: pemKey, calls: 2, wantIssued: 1},
		{name: "a token near its expiry is renewed", ttl: 2 * time.Minute, key: pemKey, calls: 3, wantIssued: 3},
		{name: "wrong key refused", ttl: time.Hour, key: otherPEM, calls: 1, wantErr: "401 Unauthorized: A JSON web token could not be decoded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			api := newAPI(t, tt.prefix, tt.ttl)
			app, err := FromSecret(secretData(tt.key, api.URL))
			g.Expect(err).NotTo(HaveOccurred())
			c := NewCache(10)
			var tokens []string
			for range tt.calls {
				tok, err := c.Token(context.Background(), app, http.DefaultClient)
				if tt.wantErr != "" {
					g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
					g.Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
					g.Expect(c.Len()).To(BeZero())
					return
				}
				g.Expect(err).NotTo(HaveOccurred())
				tokens = append(tokens, tok)
			}
			g.Expect(api.Issued()).To(Equal(tt.wantIssued))
			g.Expect(tokens[len(tokens)-1]).To(Equal(api.LastToken()))
		})
	}
}

func TestCache_KeyedByPrivateKey(t *testing.T) {
	g := NewWithT(t)
	_, pemKey, otherPEM := keys(t)
	api := newAPI(t, "", time.Hour)
	c := NewCache(10)
	right, err := FromSecret(secretData(pemKey, api.URL))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Token(context.Background(), right, http.DefaultClient)
	g.Expect(err).NotTo(HaveOccurred())

	// The same app and installation with another key gets no cached token.
	wrong, err := FromSecret(secretData(otherPEM, api.URL))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Token(context.Background(), wrong, http.DefaultClient)
	g.Expect(err).To(HaveOccurred())
	g.Expect(api.Refused()).To(Equal(int64(1)))
}

func TestCache_Bounded(t *testing.T) {
	g := NewWithT(t)
	c := NewCache(2)
	now := time.Now()
	c.store("a", Token{Value: "a", ExpiresAt: now.Add(time.Hour)}, now)
	c.store("b", Token{Value: "b", ExpiresAt: now.Add(30 * time.Minute)}, now)
	c.store("c", Token{Value: "c", ExpiresAt: now.Add(time.Hour)}, now)
	g.Expect(c.Len()).To(Equal(2))
	g.Expect(c.entries).NotTo(HaveKey("b"), "the token that expires first goes")

	c.store("d", Token{Value: "d", ExpiresAt: now.Add(time.Minute)}, now)
	g.Expect(c.entries).NotTo(HaveKey("d"), "a token already due for renewal is not kept")
	g.Expect(c.Len()).To(Equal(2))
}

func TestApiMessage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(apiMessage([]byte(`{"message":"bad jwt eyJ.abc.def"}`), "eyJ.abc.def")).To(Equal("bad jwt [jwt]"))
	g.Expect(apiMessage([]byte("<html>\n  oops\n</html>"), "x")).To(Equal("<html> oops </html>"))
	long := apiMessage([]byte(strings.Repeat("é", 500)), "x")
	g.Expect([]rune(long)).To(HaveLen(maxMessageLength + 1))
}

// TestCache_RenewsAsTimePasses: a cached token is used until RenewBefore
// its expiry, then renewed once.
func TestCache_RenewsAsTimePasses(t *testing.T) {
	g := NewWithT(t)
	_, pemKey, _ := keys(t)
	api := newAPI(t, "", time.Hour)
	app, err := FromSecret(secretData(pemKey, api.URL))
	g.Expect(err).NotTo(HaveOccurred())
	c := NewCache(10)
	start := time.Now()
	c.now = func() time.Time { return start }
	first, err := c.Token(context.Background(), app, http.DefaultClient)
	g.Expect(err).NotTo(HaveOccurred())

	c.now = func() time.Time { return start.Add(time.Hour - RenewBefore - time.Minute) }
	g.Expect(c.Token(context.Background(), app, http.DefaultClient)).To(Equal(first), "still fresh")
	g.Expect(api.Issued()).To(Equal(int64(1)))

	c.now = func() time.Time { return start.Add(time.Hour - RenewBefore + time.Second) }
	renewed, err := c.Token(context.Background(), app, http.DefaultClient)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(renewed).NotTo(Equal(first))
	g.Expect(api.Issued()).To(Equal(int64(2)))
}

// TestCache_SharesOneRequest: many callers of a cold cache share one token
// request.
func TestCache_SharesOneRequest(t *testing.T) {
	g := NewWithT(t)
	_, pemKey, _ := keys(t)
	api := newAPI(t, "", time.Hour)
	app, err := FromSecret(secretData(pemKey, api.URL))
	g.Expect(err).NotTo(HaveOccurred())
	c := NewCache(10)
	var wg sync.WaitGroup
	tokens := make([]string, 20)
	for i := range tokens {
		wg.Go(func() {
			tok, err := c.Token(context.Background(), app, http.DefaultClient)
			if err == nil {
				tokens[i] = tok
			}
		})
	}
	wg.Wait()
	g.Expect(api.Issued()).To(Equal(int64(1)))
	for _, tok := range tokens {
		g.Expect(tok).To(Equal(api.LastToken()))
	}
}

// TestRequest_DoesNotFollowRedirects: a redirect of the token endpoint is
// an error, and the JWT never reaches where it points.
func TestRequest_DoesNotFollowRedirects(t *testing.T) {
	g := NewWithT(t)
	_, pemKey, _ := keys(t)
	var leaked atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
	}))
	t.Cleanup(elsewhere.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	app, err := FromSecret(secretData(pemKey, redirecting.URL))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Request(context.Background(), app, http.DefaultClient, time.Now())
	g.Expect(err).To(MatchError(ContainSubstring("307")))
	g.Expect(leaked.Load()).To(BeZero())
}
