package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ImageScans is windlass_image_scans_total: registry scans of
// ImageRepositories, by result (success, failure).
var ImageScans = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_image_scans_total",
		Help: "Registry scans of ImageRepositories, by result (success, failure).",
	},
	[]string{"result"},
)

// ImagePushes is windlass_image_update_pushes_total: the commits
// ImageUpdateAutomations pushed (success) or failed to push (failure).
var ImagePushes = prometheus.NewCounterVec(
	prometheus.CounterOpts{
		Name: "windlass_image_update_pushes_total",
		Help: "Commits of image updates pushed to Git, by result (success, failure).",
	},
	[]string{"result"},
)

func init() {
	crmetrics.Registry.MustRegister(ImageScans, ImagePushes)
}

// RecordImageScan records a registry scan that ended with err.
func RecordImageScan(err error) {
	ImageScans.WithLabelValues(resultOf(err)).Inc()
}

// RecordImagePush records a push of an image update that ended with err.
func RecordImagePush(err error) {
	ImagePushes.WithLabelValues(resultOf(err)).Inc()
}
