package testservers

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// OIDCUser is a user of the test OpenID provider.
type OIDCUser struct {
	Username, Password, Email string
}

// OIDCProvider is a running OpenID provider: zitadel/oidc's example
// server, with a login form of username and password, its clients "web"
// (secret "secret") and "native", and the users it was started with.
type OIDCProvider struct {
	// Issuer is the provider's issuer URL (http://localhost:PORT/).
	Issuer string
	// ClientID and ClientSecret are those of its web client.
	ClientID, ClientSecret string
}

// StartOIDCProvider runs the OpenID provider on a free port with users,
// accepting redirectURIs for its clients, waits until it answers and
// stops it when t ends. Its issuer is on localhost, as the server names
// it. It fails t when the test servers are not built.
func StartOIDCProvider(t testing.TB, users []OIDCUser, redirectURIs ...string) *OIDCProvider {
	t.Helper()
	bin := binary(t, oidcBinary)
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	usersFile := filepath.Join(dir, "users.json")
	writeOIDCUsers(t, usersFile, users)
	cmd := exec.Command(bin)
	cmd.Env = serverEnv(dir, "PORT="+port, "USERS_FILE="+usersFile, "REDIRECT_URI="+strings.Join(redirectURIs, ","))
	p := start(t, "the OpenID provider", cmd)
	issuer := "http://localhost:" + port + "/"
	waitHTTP(t, "the OpenID provider", p, issuer+".well-known/openid-configuration", nil)
	return &OIDCProvider{Issuer: issuer, ClientID: "web", ClientSecret: "secret"}
}

// writeOIDCUsers writes the users file of the provider: users by ID,
// their email verified.
func writeOIDCUsers(t testing.TB, path string, users []OIDCUser) {
	t.Helper()
	byID := map[string]map[string]any{}
	for i, u := range users {
		id := "user-" + string(rune('a'+i))
		byID[id] = map[string]any{"ID": id, "Username": u.Username, "Password": u.Password, "Email": u.Email,
			"EmailVerified": true, "FirstName": u.Username, "LastName": "Test", "PreferredLanguage": "en"}
	}
	body, err := json.Marshal(byID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
}
