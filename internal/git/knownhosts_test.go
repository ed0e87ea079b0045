package git

import (
	"errors"
	"net"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// hashedKnownHosts was written by "ssh-keygen -H" for "[127.0.0.1]:2222"
// and "example.com" with the key hashedHostKey.
const (
	hashedKnownHosts = `|1|J846yHtkMMSyQjYp4yripzutBE0=|acDjX+rU8ZdFV3aiW8T4JFpzTI8= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOYrGszqcl2Bs9a5kHUWkKR/bdJOYn3u24qeazDnqQQ8
|1|uUl7T4P+1zWpuiCnXahZfmJkM+g=|BYY3JkrmL8w4gmQhrgsobXJGvjI= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOYrGszqcl2Bs9a5kHUWkKR/bdJOYn3u24qeazDnqQQ8
`
	hashedHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOYrGszqcl2Bs9a5kHUWkKR/bdJOYn3u24qeazDnqQQ8"
)

func TestKnownHosts_HostKeyCallback(t *testing.T) {
	hashedKey := mustParseAuthorizedKey(t, []byte(hashedHostKey))
	good := newSSHKey(t, "ed25519")
	rsaKey := newSSHKey(t, "rsa")
	other := newSSHKey(t, "ed25519")
	revoked := newSSHKey(t, "ed25519")
	line := func(hosts string, k ssh.Signer) string { return hosts + " " + string(authorizedKey(k)) }
	db := "# comment\n\n" +
		line("git.example.com,10.0.0.1", good) +
		line("[git.example.com]:2222", rsaKey) +
		line("*.wild.example.com,!bad.wild.example.com", good) +
		line("h?.example.org", good) +
		"@cert-authority *.example.com " + string(authorizedKey(other)) +
		"@revoked * " + string(authorizedKey(revoked)) +
		line("revoked.example.com", revoked) +
		hashedKnownHosts
	kh, err := parseKnownHosts([]byte(db))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		hostname string
		remote   string
		key      ssh.PublicKey
		wantErr  string // "" accept, "unknown" or "mismatch"
	}{
		{name: "known host, port 22", hostname: "git.example.com:22", remote: "192.0.2.1:22", key: good.PublicKey()},
		{name: "known by IP only", hostname: "unlisted.example.net:22", remote: "10.0.0.1:22", key: good.PublicKey()},
		{name: "non-standard port", hostname: "git.example.com:2222", remote: "192.0.2.1:2222", key: rsaKey.PublicKey()},
		{name: "wrong key on non-standard port", hostname: "git.example.com:2222", remote: "192.0.2.1:2222",
			key: good.PublicKey(), wantErr: "mismatch"},
		{name: "mismatch", hostname: "git.example.com:22", remote: "192.0.2.1:22", key: other.PublicKey(),
			wantErr: "mismatch"},
		{name: "unknown host", hostname: "nowhere.example.net:22", remote: "192.0.2.9:22", key: good.PublicKey(),
			wantErr: "unknown"},
		{name: "wildcard", hostname: "a.wild.example.com:22", remote: "192.0.2.1:22", key: good.PublicKey()},
		{name: "negated wildcard", hostname: "bad.wild.example.com:22", remote: "192.0.2.1:22", key: good.PublicKey(),
			wantErr: "unknown"},
		{name: "question mark", hostname: "h1.example.org:22", remote: "192.0.2.1:22", key: good.PublicKey()},
		{name: "cert authority lines are not trusted keys", hostname: "x.example.com:22", remote: "192.0.2.1:22",
			key: other.PublicKey(), wantErr: "unknown"},
		{name: "revoked key", hostname: "revoked.example.com:22", remote: "192.0.2.1:22", key: revoked.PublicKey(),
			wantErr: "mismatch"},
		{name: "hashed host with port", hostname: "127.0.0.1:2222", remote: "127.0.0.1:2222", key: hashedKey},
		{name: "hashed host", hostname: "example.com:22", remote: "192.0.2.1:22", key: hashedKey},
		{name: "hashed host, other port", hostname: "example.com:2200", remote: "192.0.2.1:2200", key: hashedKey,
			wantErr: "unknown"},
	}
	cb := kh.hostKeyCallback()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			addr, err := net.ResolveTCPAddr("tcp", tt.remote)
			g.Expect(err).NotTo(HaveOccurred())
			err = cb(tt.hostname, addr, tt.key)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var hk *hostKeyError
			g.Expect(errors.As(err, &hk)).To(BeTrue())
			g.Expect(hk.unknown).To(Equal(tt.wantErr == "unknown"))
			g.Expect(IsAuthError(err)).To(BeTrue())
		})
	}
}

func TestKnownHosts_HostKeyAlgorithms(t *testing.T) {
	ed := newSSHKey(t, "ed25519")
	rsaKey := newSSHKey(t, "rsa")
	db := "multi.example.com " + string(authorizedKey(ed)) +
		"multi.example.com " + string(authorizedKey(rsaKey)) +
		"[port.example.com]:2222 " + string(authorizedKey(ed))
	kh, err := parseKnownHosts([]byte(db))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		address string
		want    []string
	}{
		{address: "multi.example.com:22", want: []string{"ssh-ed25519", "rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"}},
		{address: "port.example.com:2222", want: []string{"ssh-ed25519"}},
		{address: "port.example.com:22", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(kh.hostKeyAlgorithms(tt.address)).To(Equal(tt.want))
		})
	}
}

func TestParseKnownHosts_Errors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{name: "empty", in: "", wantErr: "no host keys"},
		{name: "only comments", in: "# a\n\n# b\n", wantErr: "no host keys"},
		{name: "bad key", in: "host ssh-ed25519 !!!\n", wantErr: "cannot parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseKnownHosts([]byte(tt.in))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}
