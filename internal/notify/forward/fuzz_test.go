package forward

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/windlass-dev/windlass/internal/notify/dispatch"
)

// FuzzHandler feeds the event endpoint, past its authentication, any body
// and object headers: it never panics, answers 202 only for an event that
// names its object and has a message, and 400 or 413 otherwise.
func FuzzHandler(f *testing.F) {
	f.Add([]byte(`{"involvedObject":{"kind":"Kustomization","namespace":"apps","name":"web"},"severity":"error",`+
		`"timestamp":"2026-01-02T03:04:05Z","message":"health check failed","reason":"HealthCheckFailed",`+
		`"metadata":{"kustomize.toolkit.fluxcd.io/revision":"main@sha1:abc"},"reportingController":"kustomize-controller"}`),
		`{"team":"web"}`, "true")
	f.Add([]byte(`{"involvedObject":{"kind":"K","name":"n"},"message":"m","timestamp":"not a time"}`), `[]`, "")
	f.Add([]byte(`{"involvedObject":null,"message":7}`), `{"a":1}`, "false")
	f.Add([]byte(`{`), `{`, "true")
	f.Add([]byte(`null`), ``, "")
	d := dispatch.New(dispatch.Options{})
	if err := d.SetRule(dispatch.Rule{Key: "apps/all", Namespace: "apps", Sources: []dispatch.Source{{Kind: "Kustomization", Name: "*"}},
		Notifier: &inbox{}, ProviderKey: "apps/p"}); err != nil {
		f.Fatal(err)
	}
	h := &Handler{Dispatcher: d}
	f.Fuzz(func(t *testing.T, body []byte, labels, ready string) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set(LabelsHeader, labels)
		r.Header.Set(ReadyHeader, ready)
		w := httptest.NewRecorder()
		h.serveEvent(w, r)
		switch w.Code {
		case http.StatusAccepted:
			ev, _, err := decodeEvent(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
			if err != nil || ev.InvolvedObject.Kind == "" || ev.InvolvedObject.Name == "" || ev.Message == "" {
				t.Fatalf("accepted %q: %v", body, err)
			}
		case http.StatusBadRequest:
		case http.StatusRequestEntityTooLarge:
			if len(body) <= MaxEventBytes {
				t.Fatalf("a body of %d bytes refused as too large", len(body))
			}
		default:
			t.Fatalf("answered %d", w.Code)
		}
	})
}
