// Package githubapp authenticates as a GitHub App installation: it reads
// the app's credentials from the Secret of a GitRepository with provider
// github (FromSecret), signs the app's RS256 JSON Web Token (App.JWT),
// exchanges it for an installation access token at
// POST {base}/app/installations/{id}/access_tokens, and caches the tokens
// in memory until shortly before they expire (Cache). A clone then sends
// the token as the password of HTTP basic auth, with the user name
// AccessTokenUsername.
//
// Errors name the Secret key at fault, never a value: neither the private
// key, nor the JWT, nor a token appears in them.
package githubapp

import (
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Keys of the Secret named by spec.secretRef of a GitRepository with
// provider github.
const (
	// KeyAppID is the app's ID (or its client ID): the issuer of the JWT.
	KeyAppID = "githubAppID"
	// KeyInstallationID is the numeric ID of the app's installation.
	KeyInstallationID = "githubAppInstallationID"
	// KeyPrivateKey is the app's PEM RSA private key (PKCS #1 or #8).
	KeyPrivateKey = "githubAppPrivateKey"
	// KeyBaseURL is the API base URL of a GitHub Enterprise Server, such
	// as https://github.example.com/api/v3; DefaultBaseURL without it.
	KeyBaseURL = "githubAppBaseURL"
)

// DefaultBaseURL is the API of github.com.
const DefaultBaseURL = "https://api.github.com"

// AccessTokenUsername is the HTTP basic auth user name that goes with an
// installation token as the password.
const AccessTokenUsername = "x-access-token"

// JWT lifetime: GitHub refuses an exp more than 10 minutes after iat, and
// iat is set a minute in the past to allow for clock drift.
const (
	jwtBackdate = time.Minute
	jwtLifetime = 9 * time.Minute
)

// InvalidSecretError says which key of the Secret is missing or invalid.
type InvalidSecretError struct {
	// Key is the Secret key at fault.
	Key string
	// Reason says what is wrong with it, without its value.
	Reason string
}

func (e *InvalidSecretError) Error() string {
	return fmt.Sprintf("'%s' %s", e.Key, e.Reason)
}

// App is a GitHub App installation and the key it signs with.
type App struct {
	// BaseURL is the API base URL, without a trailing slash.
	BaseURL string
	// AppID is the app's ID or client ID.
	AppID string
	// InstallationID is the installation's numeric ID.
	InstallationID string
	key            *rsa.PrivateKey
	keyDigest      [sha256.Size]byte
}

// FromSecret reads an App from the data of a Secret. A missing or invalid
// key is an [*InvalidSecretError].
func FromSecret(data map[string][]byte) (*App, error) {
	for _, k := range []string{KeyAppID, KeyInstallationID, KeyPrivateKey} {
		if len(data[k]) == 0 {
			return nil, &InvalidSecretError{Key: k, Reason: "is missing"}
		}
	}
	a := &App{
		AppID:          strings.TrimSpace(string(data[KeyAppID])),
		InstallationID: strings.TrimSpace(string(data[KeyInstallationID])),
		BaseURL:        DefaultBaseURL,
	}
	if strings.ContainsAny(a.AppID, " \t\r\n") {
		return nil, &InvalidSecretError{Key: KeyAppID, Reason: "holds white space"}
	}
	if !isDigits(a.InstallationID) {
		return nil, &InvalidSecretError{Key: KeyInstallationID, Reason: "is not a number"}
	}
	if b := strings.TrimSpace(string(data[KeyBaseURL])); b != "" {
		u, err := url.Parse(b)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			return nil, &InvalidSecretError{Key: KeyBaseURL, Reason: "is not an http or https URL with a host (and no user or query)"}
		}
		a.BaseURL = strings.TrimRight(b, "/")
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(data[KeyPrivateKey])
	if err != nil {
		return nil, &InvalidSecretError{Key: KeyPrivateKey, Reason: "is not a PEM RSA private key"}
	}
	a.key = key
	a.keyDigest = sha256.Sum256(x509.MarshalPKCS1PrivateKey(key))
	return a, nil
}

// isDigits reports whether s is a non-empty string of ASCII digits.
func isDigits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Insecure reports whether the API is reached over plain HTTP.
func (a *App) Insecure() bool {
	return strings.HasPrefix(a.BaseURL, "http://")
}

// TokenURL is where the installation token is requested.
func (a *App) TokenURL() string {
	return a.BaseURL + "/app/installations/" + a.InstallationID + "/access_tokens"
}

// JWT returns the app's RS256 JSON Web Token at time now: iss the app ID,
// iat a minute before now, exp nine minutes after.
func (a *App) JWT(now time.Time) (string, error) {
	claims := jwt.RegisteredClaims{
		Issuer:    a.AppID,
		IssuedAt:  jwt.NewNumericDate(now.Add(-jwtBackdate)),
		ExpiresAt: jwt.NewNumericDate(now.Add(jwtLifetime)),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("signing the GitHub App JWT: %w", err)
	}
	return s, nil
}

// cacheKey identifies the installation and the key: two Secrets that name
// the same installation share a token only when they hold the same private
// key, so that a Secret with the app's ID and a wrong key never gets the
// token that another one's right key obtained.
func (a *App) cacheKey() string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%x", a.BaseURL, a.AppID, a.InstallationID, a.keyDigest)
}
