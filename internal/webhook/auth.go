package webhook

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // HMAC-SHA1 is what GitHub's legacy header, Nexus and generic-hmac send
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The HMAC algorithms a prefixed signature ("<algo>=<hex>") may name.
var hmacHashes = map[string]func() hash.Hash{
	"sha1":   sha1.New,
	"sha256": sha256.New,
	"sha512": sha512.New,
}

// unauthorized returns an ErrUnauthorized with a reason that must not hold
// any secret.
func unauthorized(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnauthorized}, args...)...)
}

// TimestampHeader carries the time a generic-hmac request was signed at,
// in Unix seconds. With it, X-Signature is the HMAC of
// "<timestamp>.<body>", so the time cannot be changed without the token,
// and a ReplayGuard refuses the request when it is old or seen before.
const TimestampHeader = "X-Signature-Timestamp"

// authGenericHMAC checks "X-Signature: <sha1|sha256|sha512>=<hex>", of the
// body, or of "<timestamp>.<body>" when the request carries TimestampHeader.
func authGenericHMAC(h http.Header, body []byte, token string) error {
	if ts := h.Get(TimestampHeader); ts != "" {
		if _, err := parseTimestamp(ts); err != nil {
			return err
		}
		body = timedMessage(ts, body)
	}
	return checkPrefixedHMAC(h, "X-Signature", body, token, "sha1", "sha256", "sha512")
}

// timedMessage is what a timed generic-hmac signature covers.
func timedMessage(timestamp string, body []byte) []byte {
	return append([]byte(timestamp+"."), body...)
}

// parseTimestamp reads a TimestampHeader value: decimal Unix seconds.
func parseTimestamp(value string) (time.Time, error) {
	secs, err := strconv.ParseInt(value, 10, 64)
	if err != nil || secs <= 0 {
		return time.Time{}, unauthorized("the %s header is not a time in Unix seconds", TimestampHeader)
	}
	return time.Unix(secs, 0), nil
}

// authGitHub checks X-Hub-Signature-256 (sha256=...), or when GitHub (or a
// compatible server) sends only the legacy X-Hub-Signature, that one.
func authGitHub(h http.Header, body []byte, token string) error {
	if h.Get("X-Hub-Signature-256") != "" {
		return checkPrefixedHMAC(h, "X-Hub-Signature-256", body, token, "sha256")
	}
	if h.Get("X-Hub-Signature") != "" {
		return checkPrefixedHMAC(h, "X-Hub-Signature", body, token, "sha1", "sha256")
	}
	return unauthorized("missing X-Hub-Signature-256 header")
}

// authBitbucket checks Bitbucket Server's X-Hub-Signature (sha256=... by
// default).
func authBitbucket(h http.Header, body []byte, token string) error {
	return checkPrefixedHMAC(h, "X-Hub-Signature", body, token, "sha256", "sha512", "sha1")
}

// authNexus checks X-Nexus-Webhook-Signature, the bare hex HMAC-SHA1 of the
// body.
func authNexus(h http.Header, body []byte, token string) error {
	const header = "X-Nexus-Webhook-Signature"
	sig := strings.TrimSpace(h.Get(header))
	if sig == "" {
		return unauthorized("missing %s header", header)
	}
	return checkHexHMAC(header, sha1.New, sig, body, token)
}

// authGitLab checks that X-Gitlab-Token is the token.
func authGitLab(h http.Header, _ []byte, token string) error {
	return checkTokenHeader(h, "X-Gitlab-Token", token)
}

// authHarbor checks that Authorization is the token (Harbor's "Auth Header").
func authHarbor(h http.Header, _ []byte, token string) error {
	return checkTokenHeader(h, "Authorization", token)
}

// checkTokenHeader compares a header with the token in constant time; both
// are hashed first so that not even the token's length shows in the timing.
func checkTokenHeader(h http.Header, header, token string) error {
	got := h.Get(header)
	if got == "" {
		return unauthorized("missing %s header", header)
	}
	gotSum, wantSum := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(gotSum[:], wantSum[:]) != 1 {
		return unauthorized("the %s header does not match the receiver's token", header)
	}
	return nil
}

// checkPrefixedHMAC checks a header of the form "<algo>=<hex>", algo being
// one of allowed.
func checkPrefixedHMAC(h http.Header, header string, body []byte, token string, allowed ...string) error {
	value := strings.TrimSpace(h.Get(header))
	if value == "" {
		return unauthorized("missing %s header", header)
	}
	algo, sig, ok := strings.Cut(value, "=")
	if !ok {
		return unauthorized("the %s header is not of the form <algorithm>=<hex>", header)
	}
	algo = strings.ToLower(strings.TrimSpace(algo))
	newHash, known := hmacHashes[algo]
	if !known || !slices.Contains(allowed, algo) {
		return unauthorized("the %s header names an unsupported algorithm (want one of %s)", header, strings.Join(allowed, ", "))
	}
	return checkHexHMAC(header, newHash, strings.TrimSpace(sig), body, token)
}

// checkHexHMAC compares a hex signature with the HMAC of body keyed by
// token, in constant time.
func checkHexHMAC(header string, newHash func() hash.Hash, sig string, body []byte, token string) error {
	got, err := hex.DecodeString(sig)
	if err != nil {
		return unauthorized("the %s signature is not hexadecimal", header)
	}
	mac := hmac.New(newHash, []byte(token))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return unauthorized("the %s signature does not match the body", header)
	}
	return nil
}
