package cli

import (
	"os"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/go-logr/logr"

	"github.com/windlass-dev/windlass/internal/kinds"
	"github.com/windlass-dev/windlass/internal/metrics"
)

// MemoryLimitEnv names the memory limit of the controller's container, in
// bytes: the install sets it from the container's limits.memory.
const MemoryLimitEnv = "WINDLASS_MEMORY_LIMIT"

// controllerGCPercent is the Go garbage collector's GOGC for `windlass
// controller` when $GOGC does not set one. The heap of a busy controller is
// mostly garbage of its reconciliations (parsed and rendered manifests)
// over a small live set (the caches): at Go's default, 100, the heap grows
// to twice the live set before a collection, and the peak resident memory
// with it. At 50 the peak falls by about a fifth for a few percent more CPU
// (docs/benchmark.md#api-requests-and-memory).
const controllerGCPercent = 50

// applyGCPercent sets the garbage collector's target to
// controllerGCPercent unless $GOGC sets one, and logs it.
func applyGCPercent(logger logr.Logger) {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(controllerGCPercent)
	logger.V(1).Info("Set the Go garbage collector's target", "gcPercent", controllerGCPercent)
}

// goMemoryLimit returns the Go runtime's soft memory limit in a container
// whose memory limit is container: what is left once the child processes
// (chart renders, large kustomize builds) have their share (children),
// less a tenth for what Go does not manage (the binary's mapped pages,
// thread stacks); at least a quarter of the container's limit.
func goMemoryLimit(container, children int64) int64 {
	limit := container - children - container/10
	return max(limit, container/4)
}

// applyMemoryLimit sets the Go runtime's soft memory limit from the
// container's (MemoryLimitEnv), unless GOMEMLIMIT sets it already, exports
// the container's limit (windlass_memory_limit_bytes) either way, and
// logs what it set. controllers are the controllers that run; when the
// helm or the kustomize controller is one, children is what their child
// processes may use together.
func applyMemoryLimit(logger logr.Logger, controllers []string, children int64) {
	value := os.Getenv(MemoryLimitEnv)
	if value == "" {
		return
	}
	container, err := strconv.ParseInt(value, 10, 64)
	if err != nil || container <= 0 {
		logger.Info("Ignoring a memory limit that is not a number of bytes", "env", MemoryLimitEnv, "value", value)
		return
	}
	metrics.SetMemoryLimit(container)
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var share int64
	if slices.Contains(controllers, kinds.HelmController) || slices.Contains(controllers, kinds.KustomizeController) {
		share = children
	}
	limit := goMemoryLimit(container, share)
	debug.SetMemoryLimit(limit)
	logger.Info("Set the Go memory limit from the container's", "container", container, "childProcesses", share, "goMemoryLimit", limit)
}
