package webhook

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fuzzService fuzzes one Receiver type, seeded with the request its service
// sends. Each input is verified twice: correctly signed with the fuzzed
// value as the event header (if the type has one), so that the payload and
// event parsers see it; and with the fuzzed value as the signature or token
// header, so that the header parser sees it. Verify must never panic, must
// return only typed errors that hold no token, and must never refuse a
// correctly signed request as unauthorized.
func fuzzService(f *testing.F, typ, eventHeader string, seeds ...string) {
	svc := serviceOf(typ)
	f.Add([]byte(svc.body), svc.event)
	for _, seed := range seeds {
		f.Add([]byte(seed), svc.event)
	}
	f.Add([]byte(`{"a":[1,{"b":null}],"c":"\u00e9"}`), "sha256=00")
	f.Add([]byte(`{`), "sha1=")
	f.Add([]byte(`[]`), "=")
	f.Fuzz(func(t *testing.T, body []byte, value string) {
		signed := svc.headers(body, testToken)
		if eventHeader != "" {
			signed.Set(eventHeader, value)
		}
		if bytes.HasPrefix(body, []byte("payload=")) {
			signed.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		checkVerify(t, typ, body, signed, true)
		if svc.authHeader != "" {
			forged := svc.headers(body, testToken)
			forged.Set(svc.authHeader, value)
			checkVerify(t, typ, body, forged, false)
		}
	})
}

// checkVerify calls Verify on a request and checks the invariants above.
func checkVerify(t *testing.T, typ string, body []byte, h http.Header, signed bool) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/hook/x", bytes.NewReader(body))
	r.Header = h
	res, err := Verify(r, Spec{Type: typ, Token: testToken, Events: []string{"push", "Push Hook"}})
	if err != nil {
		typed := errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrBadPayload) || errors.Is(err, ErrTooLarge)
		switch {
		case !typed:
			t.Fatalf("untyped error: %v", err)
		case strings.Contains(err.Error(), testToken):
			t.Fatalf("the error holds the token: %v", err)
		case signed && errors.Is(err, ErrUnauthorized):
			t.Fatalf("a correctly signed request was refused: %v", err)
		}
		return
	}
	if res.Skip != (res.Reason != "") {
		t.Fatalf("Skip %v with reason %q", res.Skip, res.Reason)
	}
	if serviceOf(typ).jsonOnly && !res.Skip && res.Payload == nil {
		t.Fatalf("an accepted %s request has no payload", typ)
	}
}

func FuzzVerifyGeneric(f *testing.F) {
	fuzzService(f, TypeGeneric, "", "not json at all")
}

func FuzzVerifyGenericHMAC(f *testing.F) {
	body := []byte(serviceOf(TypeGenericHMAC).body)
	f.Add(body, "sha256="+hmacHex(sha256.New, testToken, body))
	f.Add(body, "SHA512 = 00ff")
	fuzzService(f, TypeGenericHMAC, "")
}

func FuzzVerifyGitHub(f *testing.F) {
	f.Add([]byte(`{"zen":"Design for failure.","hook_id":1}`), "ping")
	f.Add([]byte(`payload=%7B%7D`), "push")
	fuzzService(f, TypeGitHub, "X-GitHub-Event")
}

func FuzzVerifyGitLab(f *testing.F) {
	fuzzService(f, TypeGitLab, "X-Gitlab-Event", `{"object_kind":"tag_push","ref":"refs/tags/v1.0.0"}`)
}

func FuzzVerifyBitbucket(f *testing.F) {
	f.Add([]byte(`{"test":true}`), "diagnostics:ping")
	fuzzService(f, TypeBitbucket, "X-Event-Key")
}

func FuzzVerifyHarbor(f *testing.F) {
	fuzzService(f, TypeHarbor, "", `{"type":"harbor.artifact.pushed","data":{}}`)
}

func FuzzVerifyDockerHub(f *testing.F) {
	fuzzService(f, TypeDockerHub, "", `{"push_data":[],"repository":{"repo_name":7}}`)
}

func FuzzVerifyQuay(f *testing.F) {
	fuzzService(f, TypeQuay, "", `{"docker_url":"quay.io/a/b","updated_tags":{"latest":"sha256:00"}}`)
}

func FuzzVerifyNexus(f *testing.F) {
	fuzzService(f, TypeNexus, "X-Nexus-Webhook-Id", `{"action":"DELETED","asset":{"name":"x"}}`)
}

func FuzzVerifyACR(f *testing.F) {
	fuzzService(f, TypeACR, "", `{"action":"ping"}`, `{"action":"push","target":{"repository":["x"]}}`)
}

func FuzzVerifyCDEvents(f *testing.F) {
	fuzzService(f, TypeCDEvents, "Ce-Type",
		`{"specversion":"1.0","type":"dev.cdevents.change.merged.0.2.0","data":{"context":{"type":"dev.cdevents.change.merged.0.2.0"},"subject":{}}}`)
}
