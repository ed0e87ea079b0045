// Package githubapi serves, on loopback, the one GitHub REST API endpoint
// that a GitHub App installation's clone needs: POST
// {base}/app/installations/{id}/access_tokens. It checks the app's JWT as
// GitHub does (an RS256 signature by the app's key, iss the app ID, an exp
// at most ten minutes after iat and not in the past) and answers with a
// fresh token and its expiry; it counts the tokens it hands out and the
// requests it refuses. An Options.PathPrefix of "/api/v3" serves it where
// a GitHub Enterprise Server does.
//
//	key, pemKey := githubapi.NewKey(t)
//	api := githubapi.NewForTest(t, githubapi.Options{AppID: "42", InstallationID: "7", PublicKey: &key.PublicKey})
//	api.OnToken(func(token string) { git.SetBasicAuth("x-access-token", token) })
//	// a Secret with githubAppBaseURL: api.URL, githubAppPrivateKey: pemKey, ...
package githubapi

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// maxJWTLifetime is the longest exp-iat that GitHub accepts.
const maxJWTLifetime = 10 * time.Minute

// Options configure a Server.
type Options struct {
	// AppID is the issuer a JWT must name.
	AppID string
	// InstallationID is the installation served; others are not found.
	InstallationID string
	// PublicKey checks the JWT's signature.
	PublicKey *rsa.PublicKey
	// PathPrefix is put before the API paths ("/api/v3" for GitHub
	// Enterprise Server); URL includes it.
	PathPrefix string
	// TokenTTL is how long a token lasts; one hour when zero.
	TokenTTL time.Duration
}

// Server is a GitHub API token endpoint on loopback.
type Server struct {
	// URL is the API base URL, with the path prefix.
	URL      string
	opts     Options
	mu       sync.Mutex
	ttl      time.Duration
	onToken  func(string)
	last     string
	issued   atomic.Int64
	refused  atomic.Int64
	lastDeny atomic.Value
}

// NewForTest starts a Server that t.Cleanup stops.
func NewForTest(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{opts: opts, ttl: opts.TokenTTL}
	if s.ttl == 0 {
		s.ttl = time.Hour
	}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + opts.PathPrefix
	return s
}

// NewKey returns a new 2048-bit RSA key and its PKCS #1 PEM, as GitHub
// hands an app's private key out.
func NewKey(t testing.TB) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("githubapi: generating a key: %v", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

// Issued returns how many tokens the server handed out.
func (s *Server) Issued() int64 { return s.issued.Load() }

// Refused returns how many token requests the server refused.
func (s *Server) Refused() int64 { return s.refused.Load() }

// LastRefusal returns why the last refused request was refused.
func (s *Server) LastRefusal() string {
	v, _ := s.lastDeny.Load().(string)
	return v
}

// LastToken returns the last token handed out.
func (s *Server) LastToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// SetTokenTTL sets how long the tokens handed out from now on last.
func (s *Server) SetTokenTTL(d time.Duration) {
	s.mu.Lock()
	s.ttl = d
	s.mu.Unlock()
}

// OnToken calls f with every token handed out, before the answer leaves.
func (s *Server) OnToken(f func(token string)) {
	s.mu.Lock()
	s.onToken = f
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	want := s.opts.PathPrefix + "/app/installations/" + s.opts.InstallationID + "/access_tokens"
	if r.Method != http.MethodPost || r.URL.Path != want {
		s.refuse(w, http.StatusNotFound, "Not Found")
		return
	}
	if refusal := s.checkJWT(r.Header.Get("Authorization")); refusal != "" {
		s.refuse(w, http.StatusUnauthorized, refusal)
		return
	}
	token := "ghs_" + randomHex()
	s.mu.Lock()
	expires := time.Now().Add(s.ttl).UTC().Truncate(time.Second)
	s.last = token
	onToken := s.onToken
	s.mu.Unlock()
	if onToken != nil {
		onToken(token)
	}
	s.issued.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"token": token, "expires_at": expires.Format(time.RFC3339)})
}

// checkJWT checks the bearer JWT of an Authorization header and returns
// GitHub's message when it refuses it, else "".
func (s *Server) checkJWT(header string) string {
	const undecodable = "A JSON web token could not be decoded"
	signed, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return undecodable
	}
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(signed, &claims, func(*jwt.Token) (any, error) { return s.opts.PublicKey, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg()}), jwt.WithIssuer(s.opts.AppID),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		return undecodable
	}
	if claims.IssuedAt == nil || claims.ExpiresAt.Sub(claims.IssuedAt.Time) > maxJWTLifetime {
		return "'Expiration time' claim ('exp') is too far in the future"
	}
	return ""
}

// refuse answers with GitHub's JSON error shape.
func (s *Server) refuse(w http.ResponseWriter, status int, message string) {
	s.refused.Add(1)
	s.lastDeny.Store(message)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": message, "documentation_url": "https://docs.github.com/rest"})
}

func randomHex() string {
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
