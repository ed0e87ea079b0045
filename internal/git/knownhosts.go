package git

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
)

// knownHost is one usable known_hosts line.
type knownHost struct {
	patterns []string // host patterns, hashed (|1|salt|hash) or plain
	key      ssh.PublicKey
	revoked  bool
}

// knownHosts is a parsed known_hosts file. It is read from the Secret's
// bytes, never from disk.
type knownHosts []knownHost

// parseKnownHosts parses known_hosts content. @cert-authority lines are
// skipped (host certificates are not supported); @revoked lines reject their
// key for every host. Content without any usable entry is an error.
func parseKnownHosts(b []byte) (knownHosts, error) {
	var db knownHosts
	rest := b
	for len(bytes.TrimSpace(rest)) > 0 {
		marker, hosts, key, _, next, err := ssh.ParseKnownHosts(rest)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, errors.New("cannot parse line: " + err.Error())
		}
		rest = next
		switch marker {
		case "":
			db = append(db, knownHost{patterns: hosts, key: key})
		case "revoked":
			db = append(db, knownHost{key: key, revoked: true})
		}
	}
	if len(db) == 0 {
		return nil, errors.New("no host keys found")
	}
	return db, nil
}

// normalizeHost writes an address the way known_hosts does: "host" for port
// 22 and "[host]:port" otherwise.
func normalizeHost(address string) string {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return address
	}
	if port == "22" || port == "" {
		return host
	}
	return "[" + host + "]:" + port
}

// keysFor returns the non-revoked keys known for the normalized host.
func (db knownHosts) keysFor(host string) []ssh.PublicKey {
	var keys []ssh.PublicKey
	for _, l := range db {
		if !l.revoked && matchHostPatterns(l.patterns, host) {
			keys = append(keys, l.key)
		}
	}
	return keys
}

// isRevoked reports whether key is marked @revoked.
func (db knownHosts) isRevoked(key ssh.PublicKey) bool {
	for _, l := range db {
		if l.revoked && bytes.Equal(l.key.Marshal(), key.Marshal()) {
			return true
		}
	}
	return false
}

// hostKeyCallback returns an ssh.HostKeyCallback that accepts a server key
// only when a known_hosts line for the dialled host name, or for the
// server's IP address, holds exactly that key.
func (db knownHosts) hostKeyCallback() ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		names := []string{normalizeHost(hostname)}
		if tcp, ok := remote.(*net.TCPAddr); ok {
			_, port, _ := net.SplitHostPort(hostname)
			ip := normalizeHost(net.JoinHostPort(tcp.IP.String(), port))
			if ip != names[0] {
				names = append(names, ip)
			}
		}
		return db.check(names, key)
	}
}

// check verifies key against the keys known for any of names.
func (db knownHosts) check(names []string, key ssh.PublicKey) error {
	if db.isRevoked(key) {
		return &hostKeyError{host: names[0]}
	}
	var known []ssh.PublicKey
	for _, n := range names {
		known = append(known, db.keysFor(n)...)
	}
	if len(known) == 0 {
		return &hostKeyError{host: names[0], unknown: true}
	}
	for _, k := range known {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return nil
		}
	}
	return &hostKeyError{host: names[0]}
}

// hostKeyAlgorithms lists the host key algorithms to offer to address, so the
// server presents a key of a type known_hosts has for it.
func (db knownHosts) hostKeyAlgorithms(address string) []string {
	var algos []string
	seen := map[string]bool{}
	for _, k := range db.keysFor(normalizeHost(address)) {
		for _, a := range algorithmsForKeyType(k.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

// algorithmsForKeyType maps a key type to the signature algorithms a server
// with such a key can use.
func algorithmsForKeyType(t string) []string {
	if t == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{t}
}

// matchHostPatterns applies a comma-separated known_hosts host field: host
// matches when one pattern matches and no negated pattern does.
func matchHostPatterns(patterns []string, host string) bool {
	matched := false
	for _, p := range patterns {
		negated := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if !matchHostPattern(p, host) {
			continue
		}
		if negated {
			return false
		}
		matched = true
	}
	return matched
}

// matchHostPattern matches one pattern: hashed, or plain with * and ?
// wildcards.
func matchHostPattern(pattern, host string) bool {
	if strings.HasPrefix(pattern, "|1|") {
		return matchHashedHost(pattern, host)
	}
	return wildcardMatch(strings.ToLower(pattern), strings.ToLower(host))
}

// matchHashedHost matches "|1|base64(salt)|base64(HMAC-SHA1(salt, host))".
func matchHashedHost(pattern, host string) bool {
	parts := strings.Split(pattern, "|")
	if len(parts) != 4 {
		return false
	}
	salt, err1 := base64.StdEncoding.DecodeString(parts[2])
	want, err2 := base64.StdEncoding.DecodeString(parts[3])
	if err1 != nil || err2 != nil {
		return false
	}
	mac := hmac.New(sha1.New, salt)
	mac.Write([]byte(host))
	return hmac.Equal(mac.Sum(nil), want)
}

// wildcardMatch matches s against a pattern where * is any run of characters
// and ? one character; every other character, '[' included, is literal.
func wildcardMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if wildcardMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && wildcardMatch(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && wildcardMatch(pattern[1:], s[1:])
}
