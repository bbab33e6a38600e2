# The sts-operator image: the operator (manager, the entrypoint) and the table server (sts), both
# static, on distroless as the non-root user 65532. `make image` writes the same image as a
# docker-archive tarball without a container engine (hack/imagebuild).
#
#   docker build --build-arg VERSION=$(git describe --tags --always) -t sts-operator:dev .

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
# Dependencies first: this layer stays cached until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ENV CGO_ENABLED=0
RUN GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/sts-operator/sts-operator/internal/version.Version=${VERSION}" \
      -o /out/ ./cmd/manager ./cmd/sts

FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="sts-operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/sts-operator/sts-operator"
COPY --from=builder /out/manager /out/sts /
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/manager"]
