package chat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/windlass-dev/windlass/internal/notify"
)

// The generic types POST the event in its wire format
// (event.toolkit.fluxcd.io/v1beta1, api/event/v1beta1), as the reference's
// Provider documentation describes the generic webhook: a JSON Event body
// and a Gotk-Component header naming the controller that reported it.
// The message field carries notify.Text, so a receiver sees "Resolved: "
// and the folded count; every other field is the event's.

// componentHeader names the reporting controller, as the reference's
// generic webhook does.
const componentHeader = "Gotk-Component"

// signatureHeader carries the HMAC of a generic-hmac body:
// "sha256=<hex>", the format the reference documents.
const signatureHeader = "X-Signature"

// newGeneric: the body is the event. Authorization comes from the Secret:
// "Bearer <token>" when it has a token, basic auth when it has a username
// and a password, unless its headers set Authorization themselves (the
// reference's documented way, which keeps working).
func newGeneric(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the webhook URL")
	if err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		body, err := notify.WireEvent(m)
		if err != nil {
			return notify.Request{}, err
		}
		headers := genericHeaders(cfg, m)
		switch {
		case hasHeader(cfg.Headers, "Authorization"):
		case cfg.Token != "":
			headers["Authorization"] = "Bearer " + cfg.Token
		case cfg.BasicUsername != "" || cfg.Password != "":
			headers["Authorization"] = basicAuth(cfg.BasicUsername, cfg.Password)
		}
		return notify.Request{URL: u.String(), Body: body, Headers: headers}, nil
	}, nil
}

// newGenericHMAC: the body is the event, signed with the token as the HMAC
// key; the token itself is never sent. Basic auth from the Secret is
// added as for generic.
func newGenericHMAC(cfg notify.Config) (requestFunc, error) {
	u, err := requireAddress(cfg, "the webhook URL")
	if err != nil {
		return nil, err
	}
	if err := require(cfg, cfg.Token, "the token (the Secret's token key, the HMAC key)"); err != nil {
		return nil, err
	}
	return func(m notify.Message) (notify.Request, error) {
		body, err := notify.WireEvent(m)
		if err != nil {
			return notify.Request{}, err
		}
		headers := genericHeaders(cfg, m)
		headers[signatureHeader] = "sha256=" + sign(body, cfg.Token)
		if !hasHeader(cfg.Headers, "Authorization") && cfg.BasicUsername != "" {
			headers["Authorization"] = basicAuth(cfg.BasicUsername, cfg.Password)
		}
		return notify.Request{URL: u.String(), Body: body, Headers: headers}, nil
	}, nil
}

func genericHeaders(cfg notify.Config, m notify.Message) map[string]string {
	headers := map[string]string{}
	if m.ReportingController != "" && !hasHeader(cfg.Headers, componentHeader) {
		headers[componentHeader] = m.ReportingController
	}
	return headers
}

// sign returns the hex HMAC-SHA256 of body with key.
func sign(body []byte, key string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// hasHeader tells whether headers set name, whatever its case.
func hasHeader(headers map[string]string, name string) bool {
	for k := range headers {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
