# Windlass build, code generation and tests. `make help` lists the targets.

SHELL := /usr/bin/env bash
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
# The race detector runs on every package but the end-to-end and benchmark
# ones, which run the built binary (its own races are not detected there).
# A package may take longer than go test's default ten minutes when two
# test runs share two cores (the git package's hundreds of clones).
GO_TEST_FLAGS ?= -race -timeout 20m

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "%-16s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build the windlass binary into bin/.
	go build -o $(BIN)/windlass ./cmd/windlass

$(CONTROLLER_GEN): hack/tools/go.mod
	go build -C hack/tools -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code and CRDs.
	cd api && $(CONTROLLER_GEN) object:headerFile=../hack/boilerplate.go.txt paths=./...
	cd api && $(CONTROLLER_GEN) crd paths=./... output:crd:artifacts:config=../config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=windlass-controller paths=./internal/... output:rbac:artifacts:config=config/rbac

.PHONY: verify-generated
verify-generated: generate ## Fail when the generated files are stale.
	@git diff --exit-code -- api config || { echo "generated files are stale: run 'make generate' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- api config)" || { git status --porcelain -- api config; echo "generated files are untracked: run 'make generate' and commit" >&2; exit 1; }

.PHONY: docs
docs: ## Regenerate the command-line reference in docs/cli from the commands.
	go run ./hack/docgen -out docs/cli

.PHONY: dev
dev: build ## Run Windlass locally: a control plane, the controllers and a demo, no cluster needed.
	$(BIN)/windlass dev $(DEV_FLAGS)

.PHONY: image
image: ## Build the container image into an OCI layout in bin/image (IMAGE_PLATFORMS=linux/amd64,linux/arm64; IMAGE_PUSH=registry/repo:tag pushes it instead).
	@set -euo pipefail; \
	version="$(or $(VERSION),$$(git describe --tags --always --dirty 2>/dev/null || echo dev))"; \
	revision="$$(git rev-parse HEAD 2>/dev/null || true)"; \
	platforms=""; \
	for p in $$(echo "$(or $(IMAGE_PLATFORMS),linux/amd64)" | tr ',' ' '); do \
		os="$${p%%/*}"; arch="$${p#*/}"; arch="$${arch%%/*}"; out="$(BIN)/image-build/windlass-$$os-$$arch"; \
		echo "building $$out ($$version)"; \
		CGO_ENABLED=0 GOOS="$$os" GOARCH="$$arch" go build -trimpath \
			-ldflags "-s -w -X github.com/windlass-dev/windlass/internal/cli.Version=$$version" -o "$$out" ./cmd/windlass; \
		platforms="$$platforms -platform $$p=$$out"; \
	done; \
	go run ./hack/image $$platforms -version "$$version" -revision "$$revision" \
		-out "$(or $(IMAGE_DIR),$(BIN)/image)" $(if $(IMAGE_PUSH),-push "$(IMAGE_PUSH)")

.PHONY: run
run: build ## Install the CRDs in the current kubectl context and run the controllers against it.
	kubectl apply --server-side -f config/crd/bases
	$(BIN)/windlass controller --log-encoding console

.PHONY: controlplane
controlplane: ## Build the test control plane from Go modules (once, cached).
	hack/controlplane.sh

.PHONY: testservers
testservers: ## Build the test servers (OCI registry, S3 gateway, cosign, helm, OpenID provider, Prometheus) from Go modules (once, cached).
	hack/testservers.sh

.PHONY: reference
reference: ## Build the reference source-controller and kustomize-controller that `bench -controllers reference` runs (once, cached; not part of CI).
	hack/reference.sh

.PHONY: vet
vet: ## Run go vet over both modules.
	go vet ./...
	cd api && go vet ./...

.PHONY: test
test: verify-generated vet controlplane testservers ## Run every test: unit, envtest and end to end.
	KUBEBUILDER_ASSETS="$$(hack/controlplane.sh --print)" go test $(GO_TEST_FLAGS) $$(go list ./... | grep -v '/test/')
	KUBEBUILDER_ASSETS="$$(hack/controlplane.sh --print)" go test -timeout 20m ./test/...
	cd api && go test ./...

# FuzzHandler is skipped: its package's TestMain starts a control plane in
# every fuzz worker too, whose processes keep the worker's pipe to go test
# open, and go test then hangs (FUZZSKIP= runs it anyway).
FUZZSKIP ?= ^FuzzHandler$$

.PHONY: fuzz
fuzz: controlplane ## Run every fuzz target for FUZZTIME each (default 30s), one after another (not part of CI).
	KUBEBUILDER_ASSETS="$$(hack/controlplane.sh --print)" FUZZSKIP='$(FUZZSKIP)' hack/fuzz.sh

.PHONY: bench
bench: controlplane ## Measure N=100, 500 and 1000 apps, both layouts, into bench-results/ (not part of CI).
	@mkdir -p bench-results
	go build -o $(BIN)/bench ./test/bench
	for layout in repo-per-app monorepo; do for n in 100 500 1000; do \
		$(BIN)/bench -n $$n -layout $$layout -timeout 30m -out bench-results/$$layout-$$n.json || exit 1; \
	done; done
