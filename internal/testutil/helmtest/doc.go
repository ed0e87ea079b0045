// Package helmtest builds real Helm charts with the Helm SDK and serves them
// on the loopback interface for Windlass's tests: HTTP(S) chart repositories
// (index.yaml plus packaged charts) and OCI charts in a registry.
//
// Chart builds a chart in memory (by default one template, a ConfigMap named
// "<release>-cm" whose data.greeting comes from .Values.greeting); Package
// and Archive write it as a .tgz with fixed modification times, so that one
// chart always packages to the same bytes; WriteDir writes it as a folder.
//
// A Repo is an HTTP chart repository: Add packages a chart into it and
// regenerates index.yaml with the SDK's IndexDirectory. Options add TLS,
// client-certificate authentication, basic auth, relative chart URLs and a
// path prefix. Repo counts the requests per path, so that a test can prove
// that nothing was downloaded when nothing changed, and serves custom
// handlers at chosen paths for hostile cases (an endless index, a redirect
// to another host).
//
// PushOCI pushes a chart to an OCI registry the way Helm does.
//
//	ch := helmtest.Chart(t, "podinfo", "6.5.0", helmtest.WithValues(map[string]any{"greeting": "hi"}))
//	repo := helmtest.NewRepo(t, helmtest.WithBasicAuth("user", "pass"))
//	repo.Add(t, ch)
//	// GET repo.URL() + "/index.yaml" lists podinfo 6.5.0
package helmtest
