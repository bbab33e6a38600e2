# sts-operator Makefile. `make help` lists the targets.
# Every tool is built from the Go module proxy into ./bin (git-ignored), pinned below.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMG ?= sts-operator:$(VERSION)

LOCALBIN := $(CURDIR)/bin
export PATH := $(LOCALBIN):$(PATH)

CONTROLLER_GEN_VERSION ?= v0.23.0
STATICCHECK_VERSION ?= v0.8.2
HELM_VERSION ?= v4.3.1

CONTROLLER_GEN := $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
STATICCHECK := $(LOCALBIN)/staticcheck-$(STATICCHECK_VERSION)
HELM := $(LOCALBIN)/helm-$(HELM_VERSION)

GO_LDFLAGS := -s -w -X github.com/sts-operator/sts-operator/internal/version.Version=$(VERSION)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n\nTargets:\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

##@ Development

.PHONY: fmt
fmt: ## Format the Go code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(STATICCHECK) ## Run gofmt check, go vet and staticcheck.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	$(STATICCHECK) ./...

.PHONY: test
test: lint ## Run all tests (unit, HTTP, envtest) with the race detector and short fuzzing.
	go test -race -count=1 ./...

.PHONY: bench
bench: ## Run the benchmarks and print the ratios against their baselines.
	go test -run '^$$' -bench . -benchmem ./internal/...

##@ Build

.PHONY: build
build: ## Build bin/manager and bin/sts.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/sts ./cmd/sts
	@if [ -d cmd/manager ]; then CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/manager ./cmd/manager; fi

.PHONY: run-sts
run-sts: build ## Run the table server locally on 127.0.0.1:9191 with ./examples/data as dataset directory.
	$(LOCALBIN)/sts --bind 127.0.0.1 --port 9191 --dataset-dir ./examples/data

##@ Tools

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(STATICCHECK): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(LOCALBIN)/staticcheck $@

$(HELM): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/helm $@
