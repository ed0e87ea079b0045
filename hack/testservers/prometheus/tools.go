//go:build tools

// Package prometheus pins the Prometheus server and promtool that the
// monitoring tests run: Prometheus scrapes Windlass's metrics and evaluates
// its alerting rules on loopback, promtool checks and unit-tests the rules.
// They live in a module of their own, apart from hack/testservers and
// Windlass's go.mod, so that their many dependencies meet neither;
// hack/testservers.sh builds them once into the cache folder.
package prometheus

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
