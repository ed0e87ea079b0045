// Package e2e holds the end-to-end tests of the windlass binary, run the way
// a user runs it.
//
// TestMain builds ./cmd/windlass once, starts the test control plane of
// package testenv (a real etcd and kube-apiserver with the Windlass CRDs
// installed), writes a kubeconfig for it, and starts `windlass controller`
// as a child process against that kubeconfig, on loopback ports. The tests
// then act as users do: they apply manifests to the API server, serve Git
// repositories from a loopback git server (package gitserver), download
// artifacts over HTTP and scrape the metrics endpoint. When the tests are
// done, TestMain sends SIGTERM to the controller and fails the run unless
// it exits with status 0 within 30 seconds.
//
// The tests that stop the API server (apiserver_test.go) start a control
// plane of their own, and a controller against it, so that the package's
// controller and the other tests never see the outage.
//
// The control plane binaries must be built first (make controlplane, or
// hack/controlplane.sh); the tests run with
//
//	go test ./test/e2e/ -count=1 -v
package e2e
