package notification

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/windlass-dev/windlass/api/meta"
	notificationv1 "github.com/windlass-dev/windlass/api/notification/v1"
	"github.com/windlass-dev/windlass/internal/conditions"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

// serverURL is where the tests' webhook Server listens.
var serverURL string

// servedFrom is what the webhook Server reads Receivers from: the
// manager's cache, which sees a status some time after the API server.
var servedFrom client.Reader

// createTokenSecret creates the token Secret name in ns.
func createTokenSecret(g Gomega, ns, name, token string) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string][]byte{notificationv1.TokenKey: []byte(token)},
	}
	g.Expect(env.Client.Create(context.Background(), secret)).To(Succeed())
}

// createReceiver creates a Receiver of type in ns whose token is in the
// Secret "token", after edit (if not nil) has changed it.
func createReceiver(g Gomega, ns, name, receiverType string, edit func(*notificationv1.Receiver),
	resources ...notificationv1.ResourceReference) *notificationv1.Receiver {
	rcv := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: notificationv1.ReceiverSpec{
			Type:      receiverType,
			Resources: resources,
			SecretRef: meta.LocalObjectReference{Name: "token"},
		},
	}
	if edit != nil {
		edit(rcv)
	}
	g.Expect(env.Client.Create(context.Background(), rcv)).To(Succeed())
	return rcv
}

// waitReady waits until rcv is Ready, and the webhook Server listens and
// sees it so at its path, and returns it.
func waitReady(g Gomega, rcv *notificationv1.Receiver) *notificationv1.Receiver {
	latest := &notificationv1.Receiver{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(rcv), latest)).To(Succeed())
		g.Expect(conditions.IsTrue(latest, meta.ReadyCondition)).To(BeTrue(), "Ready: %s", conditions.Message(latest, meta.ReadyCondition))
		g.Expect(latest.Status.ObservedGeneration).To(Equal(latest.Generation))
		var served notificationv1.ReceiverList
		g.Expect(servedFrom.List(context.Background(), &served,
			client.MatchingFields{WebhookPathIndexKey: latest.Status.WebhookPath})).To(Succeed())
		g.Expect(served.Items).To(ContainElement(Satisfy(func(r notificationv1.Receiver) bool {
			return r.Name == latest.Name && r.Namespace == latest.Namespace && r.Generation == latest.Generation &&
				conditions.IsTrue(&r, meta.ReadyCondition)
		})), "the webhook Server's cache has the Receiver Ready at its path")
		resp, err := http.Head(serverURL)
		g.Expect(err).NotTo(HaveOccurred(), "the webhook Server listens")
		g.Expect(resp.Body.Close()).To(Succeed())
	}, timeout, interval).Should(Succeed())
	return latest
}

// waitStalled waits until rcv is Stalled, and returns it.
func waitStalled(g Gomega, rcv *notificationv1.Receiver) *notificationv1.Receiver {
	latest := &notificationv1.Receiver{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(rcv), latest)).To(Succeed())
		g.Expect(conditions.IsTrue(latest, meta.StalledCondition)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	return latest
}

// expectedPath is the webhook path of a Receiver, computed here.
func expectedPath(token, name, namespace string) string {
	sum := sha256.Sum256([]byte(token + name + namespace))
	return "/hook/" + hex.EncodeToString(sum[:])
}

// postWebhook sends body to the Server at path with headers and returns the
// status code and the answer.
func postWebhook(g Gomega, path string, headers map[string]string, body []byte) (int, string) {
	req, err := http.NewRequest(http.MethodPost, serverURL+path, bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return do(g, req)
}

// do sends req and returns the status code and the answer.
func do(g Gomega, req *http.Request) (int, string) {
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(answer)
}

// hmacSHA256 returns the hex HMAC-SHA256 of body keyed with token.
func hmacSHA256(token string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// annotations returns the annotations of obj as the API server has them.
func annotations(g Gomega, obj client.Object) map[string]string {
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	return obj.GetAnnotations()
}
