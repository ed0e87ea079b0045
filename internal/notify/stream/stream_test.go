package stream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventv1 "github.com/windlass-dev/windlass/api/event/v1beta1"
	"github.com/windlass-dev/windlass/internal/notify"
)

const (
	subject   = "flux.events"
	publisher = "flux"
	password  = "s3cr3t-nats-pw"
)

// startNATS runs a real NATS server on loopback: the user "flux" may
// publish on flux.events only, the user "reader" may subscribe to
// anything. It returns the server's URL.
func startNATS(t *testing.T) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: publisher, Password: password, Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{subject}}, Subscribe: &server.SubjectPermission{Deny: []string{">"}}}},
			{Username: "reader", Password: "reader-pw"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	return ns.ClientURL()
}

// subscribe returns a subscription of the reader to subject.
func subscribe(t *testing.T, g Gomega, serverURL, subj string) *nats.Subscription {
	nc, err := nats.Connect(serverURL, nats.UserInfo("reader", "reader-pw"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync(subj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nc.Flush()).To(Succeed())
	return sub
}

func message() notify.Message {
	return notify.Message{Folded: 2, Event: eventv1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Kustomization", Namespace: "apps", Name: "webapp"},
		Severity:       eventv1.SeverityError, Timestamp: metav1.NewTime(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)),
		Message: "health check failed", Reason: "HealthCheckFailed", ReportingController: "kustomize-controller",
		Metadata: map[string]string{"kustomize.toolkit.fluxcd.io/revision": "main@sha1:aaa"},
	}}
}

// TestPublish: the event, in its wire format, reaches a subscriber of the
// subject, with the Secret's headers, through the path the dispatcher
// uses (New, then Post).
func TestPublish(t *testing.T) {
	g := NewWithT(t)
	serverURL := startNATS(t)
	sub := subscribe(t, g, serverURL, ">")
	n, err := New(notify.Config{AllowLoopback: true, Type: "nats", Address: serverURL, Channel: subject, BasicUsername: publisher, Password: password,
		Headers: map[string]string{"X-Cluster": "prod"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), message())).To(Succeed())
	msg, err := sub.NextMsg(30 * time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(msg.Subject).To(Equal(subject))
	g.Expect(msg.Header.Get("X-Cluster")).To(Equal("prod"))
	var e eventv1.Event
	g.Expect(json.Unmarshal(msg.Data, &e)).To(Succeed())
	g.Expect(e.InvolvedObject.Name).To(Equal("webapp"))
	g.Expect(e.Reason).To(Equal("HealthCheckFailed"))
	g.Expect(e.Message).To(Equal("health check failed\n(and 2 more like it)"))
	g.Expect(e.Metadata).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/revision", "main@sha1:aaa"))
}

// TestPublishTLS: with certSecretRef's CA, the message goes over TLS to
// a server whose certificate that CA signed; without it the handshake
// fails.
func TestPublishTLS(t *testing.T) {
	g := NewWithT(t)
	certs := httptest.NewUnstartedServer(nil)
	certs.StartTLS() // only for its certificate, for 127.0.0.1
	t.Cleanup(certs.Close)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		TLS: true, TLSConfig: certs.TLS.Clone(), Username: publisher, Password: password})
	g.Expect(err).NotTo(HaveOccurred())
	go ns.Start()
	t.Cleanup(ns.Shutdown)
	g.Expect(ns.ReadyForConnections(30 * time.Second)).To(BeTrue())
	address := ns.ClientURL()
	g.Expect(address).To(HavePrefix("tls://"))
	pool := x509.NewCertPool()
	pool.AddCert(certs.Certificate())

	n, err := New(notify.Config{AllowLoopback: true, Type: "nats", Address: address, Channel: subject, BasicUsername: publisher, Password: password,
		TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), message())).To(Succeed())

	n, err = New(notify.Config{AllowLoopback: true, Type: "nats", Address: address, Channel: subject, BasicUsername: publisher, Password: password})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n.Post(context.Background(), message())).To(MatchError(ContainSubstring("certificate")))
}

// TestPublishRefused: the server's refusals (bad credentials, a subject
// the user may not publish on, no server at all) are errors that say so
// and never quote the password.
func TestPublishRefused(t *testing.T) {
	serverURL := startNATS(t)
	u, _ := url.Parse(serverURL)
	withPassword := "nats://" + publisher + ":" + password + "@" + u.Host
	tests := []struct {
		name    string
		cfg     notify.Config
		wantErr string
	}{
		{"bad password", notify.Config{AllowLoopback: true, Address: serverURL, Channel: subject, BasicUsername: publisher, Password: password + "-wrong"}, "Authorization Violation"},
		{"subject not allowed", notify.Config{AllowLoopback: true, Address: serverURL, Channel: "other.events", BasicUsername: publisher, Password: password}, "Permissions Violation"},
		{"subject not allowed, credentials in the address", notify.Config{AllowLoopback: true, Address: withPassword, Channel: "other.events"}, "Permissions Violation"},
		{"no server", notify.Config{AllowLoopback: true, Address: "nats://127.0.0.1:1", Channel: subject, Password: password, BasicUsername: publisher}, "connecting to nats://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.cfg.Type, tt.cfg.Timeout = "nats", 20*time.Second
			n, err := New(tt.cfg)
			g.Expect(err).NotTo(HaveOccurred())
			err = n.Post(context.Background(), message())
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring(password))
		})
	}
}

// TestNewRefuses: what a nats Provider cannot publish with is refused
// before anything is sent, with an error that names it.
func TestNewRefuses(t *testing.T) {
	proxy, _ := url.Parse("http://proxy:3128")
	tests := []struct {
		cfg     notify.Config
		wantErr string
	}{
		{notify.Config{AllowLoopback: true, Channel: subject}, "an address is required"},
		{notify.Config{AllowLoopback: true, Address: "http://nats:4222", Channel: subject}, "want nats://HOST:PORT"},
		{notify.Config{AllowLoopback: true, Address: "nats://169.254.169.254:4222", Channel: subject}, "link-local"},
		{notify.Config{AllowLoopback: true, Address: "nats://nats:4222"}, "the subject is required: set spec.channel"},
		{notify.Config{AllowLoopback: true, Address: "nats://nats:4222", Channel: "flux.*"}, "has a wildcard"},
		{notify.Config{AllowLoopback: true, Address: "nats://nats:4222", Channel: "flux..events"}, "has an empty token"},
		{notify.Config{AllowLoopback: true, Address: "nats://nats:4222", Channel: "flux events"}, "holds whitespace"},
		{notify.Config{AllowLoopback: true, Address: "nats://nats:4222", Channel: subject, Proxy: proxy}, "a proxy (spec.proxySecretRef) is not supported"},
		{notify.Config{AllowLoopback: true, Address: "http://u:" + password + "@nats:4222", Channel: subject}, "want nats://HOST:PORT"},
	}
	for _, tt := range tests {
		t.Run(tt.wantErr, func(t *testing.T) {
			g := NewWithT(t)
			tt.cfg.Type = "nats"
			_, err := New(tt.cfg)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(strings.Contains(err.Error(), password)).To(BeFalse())
		})
	}
}
