# syntax=docker/dockerfile:1
# The Windlass image, for those with Docker (or another BuildKit builder):
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     -t registry.example.com/windlass:v0.1.0 .
#
# `make image` builds the same image without Docker, with
# go-containerregistry (hack/image and internal/containerimage): an OCI layout in bin/image, or a push
# with IMAGE_PUSH=registry/repository:tag.

# The binary, cross-compiled on the builder's platform: static, no cgo.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY api/go.mod api/go.sum ./api/
RUN go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/windlass-dev/windlass/internal/cli.Version=${VERSION}" \
      -o /out/windlass ./cmd/windlass

# The image: distroless static (CA certificates, /etc/passwd with the
# nonroot user 65532, no shell), the binary, and nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.source="https://github.com/windlass-dev/windlass" \
      org.opencontainers.image.title="windlass" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/windlass /usr/local/bin/windlass
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/windlass"]
CMD ["controller"]
