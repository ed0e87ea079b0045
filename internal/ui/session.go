package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// User is who a page is served to, as sign-in established it: the
// username and groups the API server knows them by.
type User struct {
	Name   string   `json:"n"`
	Groups []string `json:"g,omitempty"`
	// ID is the session's random ID, which its CSRF token derives from.
	ID string `json:"i"`
	// Expires is when the session ends, in Unix seconds.
	Expires int64 `json:"e"`
}

// userKey is the context key of the signed-in user.
type userKey struct{}

// withUser returns ctx with u.
func withUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// userFrom returns the signed-in user of ctx.
func userFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// The cookies of sign-in: the session, and the state of a sign-in through
// an OpenID provider under way.
const (
	sessionCookie = "windlass_session"
	oidcCookie    = "windlass_oidc"
)

// signer signs and checks the values of cookies with an HMAC key: a
// cookie's value is its JSON, base64, a dot and its MAC.
type signer struct {
	key []byte
}

// newSigner returns a signer with key, or with a random key when key is
// empty (sessions then end with the process).
func newSigner(key []byte) signer {
	if len(key) == 0 {
		key = randomBytes(32)
	}
	return signer{key: key}
}

// mac returns the MAC of purpose and value.
func (s signer) mac(purpose, value string) string {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(purpose + "\x00" + value))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// seal returns v as a signed cookie value of purpose.
func (s signer) seal(purpose string, v any) (string, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	value := base64.RawURLEncoding.EncodeToString(body)
	return value + "." + s.mac(purpose, value), nil
}

// open reads a signed cookie value of purpose into v; false when it is
// not one this signer sealed.
func (s signer) open(purpose, sealed string, v any) bool {
	value, mac, found := strings.Cut(sealed, ".")
	if !found || !hmac.Equal([]byte(mac), []byte(s.mac(purpose, value))) {
		return false
	}
	body, err := base64.RawURLEncoding.DecodeString(value)
	return err == nil && json.Unmarshal(body, v) == nil
}

// setCookie sets a cookie of the UI: HTTP-only, same-site lax (the
// provider's redirect back is a top-level GET), secure over HTTPS.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: int(maxAge.Seconds()), HttpOnly: true,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https", SameSite: http.SameSiteLaxMode})
}

// clearCookie removes a cookie.
func clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// randomID returns a random URL-safe string of 192 bits: session IDs,
// OIDC states and nonces, the CSRF token of the pages without sign-in.
func randomID() string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(24))
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("ui: no randomness: " + err.Error())
	}
	return b
}
