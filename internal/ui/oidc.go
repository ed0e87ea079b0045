package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// OIDC signs users in through an OpenID provider, with the authorization
// code flow (PKCE, state and nonce), as the API server's own OIDC flags
// would name them: the username and groups come from the claims named
// here, with their prefixes.
type OIDC struct {
	// IssuerURL is the provider's issuer.
	IssuerURL string
	// ClientID and ClientSecret identify the UI to the provider.
	ClientID, ClientSecret string
	// RedirectURL is this UI's /auth/callback, as the browser reaches it.
	RedirectURL string
	// UsernameClaim names the claim of the username (email by default);
	// an email is taken only when email_verified is not false.
	// UsernamePrefix prefixes it ("-" for none; by default the issuer and
	// "#" unless the claim is email), as the API server's flag does; a
	// username or group in system: is refused.
	UsernameClaim, UsernamePrefix string
	// GroupsClaim names the claim of the groups (groups by default).
	GroupsClaim, GroupsPrefix string
	// Scopes are asked for beside openid (email, profile and groups by
	// default).
	Scopes []string

	mu       sync.Mutex
	provider *oidc.Provider
}

// oidcState is what a sign-in under way keeps in its cookie.
type oidcState struct {
	State, Nonce, Verifier, Next string
	Expires                      int64
}

// oidcStateTTL bounds the time a user takes at the provider.
const oidcStateTTL = 10 * time.Minute

// discover returns the provider, discovering it on first use (and again
// after a failure, so that a provider down at start does not stay so).
func (o *OIDC) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.IssuerURL)
	if err != nil {
		return nil, fmt.Errorf("discovering the OpenID provider %s: %w", o.IssuerURL, err)
	}
	o.provider = p
	return p, nil
}

// config returns the OAuth 2 configuration of the flow.
func (o *OIDC) config(p *oidc.Provider) *oauth2.Config {
	scopes := o.Scopes
	if len(scopes) == 0 {
		scopes = []string{"email", "profile", "groups"}
	}
	return &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: append([]string{oidc.ScopeOpenID}, scopes...)}
}

// signInWithOIDC sends the browser to the provider.
func (s *Server) signInWithOIDC(w http.ResponseWriter, r *http.Request) {
	o := s.SignIn.OIDC
	if o == nil {
		s.fail(w, http.StatusNotFound, "signing in through an OpenID provider is off")
		return
	}
	p, err := o.discover(r.Context())
	if err != nil {
		s.Log.Error(err, "Signing in through OIDC")
		s.renderSignIn(w, http.StatusBadGateway, r.URL.Query().Get("next"), "The OpenID provider cannot be reached; try again later.")
		return
	}
	st := oidcState{State: randomID(), Nonce: randomID(), Verifier: oauth2.GenerateVerifier(),
		Next: localPath(r.URL.Query().Get("next")), Expires: s.now().Add(oidcStateTTL).Unix()}
	value, err := s.signer.seal(oidcCookie, st)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "starting the sign-in failed")
		return
	}
	setCookie(w, r, oidcCookie, value, oidcStateTTL)
	http.Redirect(w, r, o.config(p).AuthCodeURL(st.State, oidc.Nonce(st.Nonce), oauth2.S256ChallengeOption(st.Verifier)), http.StatusFound)
}

// oidcCallback ends a sign-in through the provider: it checks the state,
// exchanges the code, verifies the ID token and its nonce, and starts the
// session of the user its claims name.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	o := s.SignIn.OIDC
	var st oidcState
	c, err := r.Cookie(oidcCookie)
	if o == nil || err != nil || !s.signer.open(oidcCookie, c.Value, &st) || time.Unix(st.Expires, 0).Before(s.now()) ||
		r.URL.Query().Get("state") != st.State {
		s.renderSignIn(w, http.StatusBadRequest, "/", "This sign-in was not started here, or took too long: sign in again.")
		return
	}
	clearCookie(w, oidcCookie)
	if msg := r.URL.Query().Get("error"); msg != "" {
		s.renderSignIn(w, http.StatusUnauthorized, st.Next, "The OpenID provider refused the sign-in: "+msg)
		return
	}
	u, err := o.userOf(r.Context(), r.URL.Query().Get("code"), st)
	if err != nil {
		s.Log.Info("An OIDC sign-in failed", "error", err.Error())
		s.renderSignIn(w, http.StatusUnauthorized, st.Next, "The sign-in failed: "+err.Error())
		return
	}
	s.startSession(w, r, u, st.Next)
}

// userOf exchanges code for tokens and returns the user they name.
func (o *OIDC) userOf(ctx context.Context, code string, st oidcState) (User, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return User{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg := o.config(p)
	token, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(st.Verifier))
	if err != nil {
		return User{}, fmt.Errorf("exchanging the code: %w", err)
	}
	raw, ok := token.Extra("id_token").(string)
	if !ok {
		return User{}, errors.New("the provider sent no ID token")
	}
	idToken, err := p.Verifier(&oidc.Config{ClientID: o.ClientID}).Verify(ctx, raw)
	if err != nil {
		return User{}, fmt.Errorf("verifying the ID token: %w", err)
	}
	if idToken.Nonce != st.Nonce {
		return User{}, errors.New("the ID token is not of this sign-in (nonce)")
	}
	claims := map[string]any{}
	if err := idToken.Claims(&claims); err != nil {
		return User{}, fmt.Errorf("reading the ID token's claims: %w", err)
	}
	if _, ok := claims[o.usernameClaim()]; !ok {
		// Some providers put the profile's claims in the userinfo only.
		info, err := p.UserInfo(ctx, cfg.TokenSource(ctx, token))
		if err != nil {
			return User{}, fmt.Errorf("reading the user's info: %w", err)
		}
		if err := info.Claims(&claims); err != nil {
			return User{}, fmt.Errorf("reading the user's info: %w", err)
		}
		if info.Subject != idToken.Subject {
			return User{}, errors.New("the user's info is of another subject than the ID token")
		}
	}
	return o.userFromClaims(claims)
}

// usernameClaim returns the claim of the username.
func (o *OIDC) usernameClaim() string {
	if o.UsernameClaim == "" {
		return "email"
	}
	return o.UsernameClaim
}

// userFromClaims returns the user claims name.
func (o *OIDC) userFromClaims(claims map[string]any) (User, error) {
	name, _ := claims[o.usernameClaim()].(string)
	if name == "" {
		return User{}, fmt.Errorf("the provider's claims have no %q", o.usernameClaim())
	}
	if o.usernameClaim() == "email" {
		if verified, ok := claims["email_verified"]; ok && verified != true && verified != "true" {
			return User{}, errors.New("the provider has not verified this email address")
		}
	}
	u := User{Name: o.usernamePrefix() + name}
	if strings.HasPrefix(u.Name, systemPrefix) {
		return User{}, fmt.Errorf("the username %q is reserved to Kubernetes: set --ui-oidc-username-prefix", u.Name)
	}
	groupsClaim := o.GroupsClaim
	if groupsClaim == "" {
		groupsClaim = "groups"
	}
	var groups []any
	switch claimed := claims[groupsClaim].(type) {
	case string:
		groups = []any{claimed}
	case []any:
		groups = claimed
	}
	for _, g := range groups {
		// A group the provider names system:masters must not be cluster-admin.
		if g, ok := g.(string); ok && !strings.HasPrefix(o.GroupsPrefix+g, systemPrefix) {
			u.Groups = append(u.Groups, o.GroupsPrefix+g)
		}
	}
	return u, nil
}

// systemPrefix starts the names Kubernetes keeps for itself (system:masters,
// system:serviceaccount:...): no provider's claim may be impersonated as one.
const systemPrefix = "system:"

// usernamePrefix returns the prefix of usernames, as the API server's
// --oidc-username-prefix: "-" for none, and by default the issuer and "#"
// unless the username is the email.
func (o *OIDC) usernamePrefix() string {
	switch {
	case o.UsernamePrefix == "-":
		return ""
	case o.UsernamePrefix == "" && o.usernameClaim() != "email":
		return o.IssuerURL + "#"
	}
	return o.UsernamePrefix
}
