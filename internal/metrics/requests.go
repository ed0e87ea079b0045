package metrics

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// APIRequests is windlass_api_requests_total: the controllers' requests to
// the API server by Kubernetes verb (get, list, create, update, patch,
// delete, ...) and resource ("kustomizations/status" for a subresource,
// "discovery" for the discovery and OpenAPI documents), dry runs apart.
// It shows which kinds cost the API server what, where
// rest_client_requests_total only says by HTTP method.
var APIRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "windlass_api_requests_total",
	Help: "Requests to the API server, by Kubernetes verb, resource and whether they were dry runs.",
}, []string{"verb", "resource", "dry_run"})

func init() {
	crmetrics.Registry.MustRegister(APIRequests)
}

// countRequest counts a request made with the HTTP method to u.
func countRequest(method string, u url.URL) {
	APIRequests.WithLabelValues(requestLabels(method, u)).Inc()
}

// requestLabels returns the labels of APIRequests for a request made with
// the HTTP method to u: the Kubernetes verb; the resource with its
// subresource ("deployments/status"), "discovery" for the discovery and
// OpenAPI documents, "other" for any other path; and whether it is a dry
// run.
func requestLabels(method string, u url.URL) (verb, resource, dryRun string) {
	query := u.Query()
	dryRun = strconv.FormatBool(query.Has("dryRun"))
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	case parts[0] == "api" || parts[0] == "apis" || parts[0] == "openapi" || parts[0] == "version":
		return strings.ToLower(method), "discovery", dryRun
	default:
		return strings.ToLower(method), "other", dryRun
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) != 2 {
		rest = rest[2:] // namespaces/NS/resource...; "namespaces/NS" is the Namespace itself
	}
	if len(rest) == 0 {
		return strings.ToLower(method), "discovery", dryRun
	}
	resource = rest[0]
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	return kubeVerb(method, len(rest) >= 2, query.Has("watch")), resource, dryRun
}

// kubeVerb maps an HTTP method to the Kubernetes verb of a request on one
// named object or on a collection.
func kubeVerb(method string, named, watch bool) string {
	switch method {
	case "GET":
		switch {
		case watch:
			return "watch"
		case named:
			return "get"
		}
		return "list"
	case "POST":
		return "create"
	case "PUT":
		return "update"
	case "PATCH":
		return "patch"
	case "DELETE":
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return strings.ToLower(method)
}
