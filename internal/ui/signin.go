package ui

import (
	"context"
	"crypto/subtle"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SignIn makes the UI serve signed-in users only, each seeing and doing
// what the API server lets them: reads are filtered by SubjectAccessReviews
// of the user, actions are made as the user (impersonation).
type SignIn struct {
	// Client reviews tokens and access (TokenReview, SubjectAccessReview)
	// as the controller.
	Client client.Client
	// Impersonate returns an uncached client that acts as a user: it
	// performs the user's actions and reads what the cache does not hold
	// (the objects a Kustomization applied). Nil offers neither.
	Impersonate func(User) (client.Client, error)
	// ImpersonatePods returns the pods' API as a user, for their logs.
	ImpersonatePods func(User) (corev1client.PodsGetter, error)
	// ReadOnly offers no actions.
	ReadOnly bool
	// Tokens lets users sign in with a Kubernetes token, which a
	// TokenReview checks; the token itself is not kept.
	Tokens bool
	// OIDC, when set, signs users in through an OpenID provider.
	OIDC *OIDC
	// Key signs the session cookies; empty is a random key, and sessions
	// end with the process.
	Key []byte
	// SessionTTL is how long a session lasts (8 hours when 0).
	SessionTTL time.Duration
}

// defaultSessionTTL is how long a session lasts by default.
const defaultSessionTTL = 8 * time.Hour

// ttl returns how long a session lasts.
func (s *SignIn) ttl() time.Duration {
	if s.SessionTTL > 0 {
		return s.SessionTTL
	}
	return defaultSessionTTL
}

// signInPage is what the sign-in page shows.
type signInPage struct {
	Tokens, OIDC bool
	CSRF, Next   string
	Error        string
}

// maxTokenLength bounds a pasted token, in bytes.
const maxTokenLength = 16 << 10

// publicPaths are served without a session.
var publicPaths = []string{"/signin", "/signin/", "/auth/callback", "/static/"}

// requireSignIn serves h to signed-in users, with the user in the
// request's context; others are sent to the sign-in page.
func (s *Server) requireSignIn(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range publicPaths {
			if r.URL.Path == p || strings.HasSuffix(p, "/") && strings.HasPrefix(r.URL.Path, p) {
				h.ServeHTTP(w, r)
				return
			}
		}
		u, ok := s.sessionUser(r)
		if !ok {
			if r.Method != http.MethodGet || r.URL.Path == "/events" {
				s.fail(w, http.StatusUnauthorized, "sign in first")
				return
			}
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		r = r.WithContext(withUser(r.Context(), u))
		if pw, ok := w.(*pageWriter); ok {
			pw.signedIn = s.signedInAs(r)
		}
		h.ServeHTTP(w, r)
	})
}

// sessionUser returns the user of r's session cookie, if it is valid.
func (s *Server) sessionUser(r *http.Request) (User, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return User{}, false
	}
	var u User
	if !s.signer.open(sessionCookie, c.Value, &u) || u.Name == "" || time.Unix(u.Expires, 0).Before(s.now()) {
		return User{}, false
	}
	return u, true
}

// startSession signs u in: it sets the session cookie and sends the
// browser to next.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u User, next string) {
	ttl := s.SignIn.ttl()
	u.ID, u.Expires = randomID(), s.now().Add(ttl).Unix()
	value, err := s.signer.seal(sessionCookie, u)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "starting the session failed")
		return
	}
	setCookie(w, r, sessionCookie, value, ttl)
	s.Log.Info("Signed in to the web UI", "user", u.Name, "groups", u.Groups)
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
}

// localPath returns next when it is a path of this UI, else "/": a
// sign-in never sends the browser to another site.
func localPath(next string) string {
	if strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "/" // browsers drop tabs and newlines, and read a backslash as a slash
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return (&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String()
}

// signInForm serves the sign-in page.
func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) {
	s.renderSignIn(w, http.StatusOK, r.URL.Query().Get("next"), "")
}

// renderSignIn serves the sign-in page with an error, if any.
func (s *Server) renderSignIn(w http.ResponseWriter, status int, next, msg string) {
	s.renderStatus(w, status, "signin", signInPage{Tokens: s.SignIn.Tokens, OIDC: s.SignIn.OIDC != nil, CSRF: s.csrf, Next: localPath(next), Error: msg})
}

// signInWithToken signs a user in with a Kubernetes token: the API server
// says whose it is (TokenReview); the token is not kept.
func (s *Server) signInWithToken(w http.ResponseWriter, r *http.Request) {
	next := r.PostFormValue("next")
	if !s.SignIn.Tokens {
		s.fail(w, http.StatusNotFound, "signing in with a token is off")
		return
	}
	if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
		s.fail(w, http.StatusForbidden, "the request did not come from this UI's page")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if len(token) > maxTokenLength {
		s.renderSignIn(w, http.StatusBadRequest, next, "This is not a token: it is too long.")
		return
	}
	u, err := s.reviewToken(r.Context(), token)
	if err != nil {
		s.Log.Info("A token sign-in failed", "error", err.Error())
		s.renderSignIn(w, http.StatusUnauthorized, next, "The API server did not accept this token.")
		return
	}
	s.startSession(w, r, u, next)
}

// reviewToken returns the user the API server knows token as.
func (s *Server) reviewToken(ctx context.Context, token string) (User, error) {
	if token == "" {
		return User{}, fmt.Errorf("no token")
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := s.SignIn.Client.Create(ctx, review); err != nil {
		return User{}, fmt.Errorf("reviewing the token: %w", err)
	}
	if !review.Status.Authenticated {
		return User{}, fmt.Errorf("not authenticated: %s", review.Status.Error)
	}
	return User{Name: review.Status.User.Username, Groups: review.Status.User.Groups}, nil
}

// signOut ends the session.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrfFor(r))) != 1 {
		s.fail(w, http.StatusForbidden, "the request did not come from this UI's page")
		return
	}
	clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// csrfFor returns the token the forms of r's page carry: the session's
// own when a user is signed in, else the server's.
func (s *Server) csrfFor(r *http.Request) string {
	if u, ok := userFrom(r.Context()); ok {
		return s.signer.mac("csrf", u.ID)
	}
	return s.csrf
}

// signedInAs returns the header's part that says who is signed in, with
// the form that signs out: empty without sign-in.
func (s *Server) signedInAs(r *http.Request) string {
	u, ok := userFrom(r.Context())
	if !ok {
		return ""
	}
	return fmt.Sprintf(`<span class="muted" id="signed-in">Signed in as %s</span><form method="post" action="/signout" class="signout">`+
		`<input type="hidden" name="csrf" value="%s"><button type="submit" id="sign-out">Sign out</button></form>`,
		html.EscapeString(u.Name), html.EscapeString(s.csrfFor(r)))
}
