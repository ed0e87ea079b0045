package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a notification, in the result label of Notifications.
const (
	// NotificationSent: the provider accepted it.
	NotificationSent = "sent"
	// NotificationFolded: it repeated one sent shortly before and was
	// folded into it (not sent).
	NotificationFolded = "folded"
	// NotificationFailed: sending failed, after its retries.
	NotificationFailed = "failed"
)

// Notifications is windlass_notifications_total: notifications per
// Provider (its namespace, name and type) and result: sent, folded or
// failed.
var Notifications = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_notifications_total",
		Help: "Notifications by Provider (exported_namespace, provider, type) and result: sent, folded or failed.",
	},
	[]string{namespaceLabel, "provider", "type", "result"},
)

// ReceiverRequests is windlass_receiver_requests_total: webhook requests
// per Receiver, accepted or refused. A request to no Receiver counts with
// an empty name.
var ReceiverRequests = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_receiver_requests_total",
		Help: "Webhook requests by Receiver and result: accepted or refused.",
	},
	[]string{namespaceLabel, nameLabel, "result"},
)

// Results of a webhook request, in the result label of ReceiverRequests.
const (
	// RequestAccepted: the request was verified and its targets asked to
	// reconcile.
	RequestAccepted = "accepted"
	// RequestRefused: the request was refused (no such Receiver, a bad
	// signature or token, an event the Receiver does not take).
	RequestRefused = "refused"
)

func init() {
	crmetrics.Registry.MustRegister(Notifications, ReceiverRequests)
}

// RecordNotification records a notification to the Provider key, of
// provider type typ, with result.
func RecordNotification(key client.ObjectKey, typ, result string) {
	Notifications.WithLabelValues(key.Namespace, key.Name, typ, result).Inc()
}

// ForgetProvider drops the series of the deleted Provider key.
func ForgetProvider(key client.ObjectKey) {
	Notifications.DeletePartialMatch(prometheus.Labels{namespaceLabel: key.Namespace, "provider": key.Name})
}

// RecordReceiverRequest records a webhook request to the Receiver key
// (empty for none) with result.
func RecordReceiverRequest(key client.ObjectKey, result string) {
	ReceiverRequests.WithLabelValues(key.Namespace, key.Name, result).Inc()
}

// ForgetReceiver drops the series of the deleted Receiver key.
func ForgetReceiver(key client.ObjectKey) {
	ReceiverRequests.DeletePartialMatch(prometheus.Labels{namespaceLabel: key.Namespace, nameLabel: key.Name})
}
