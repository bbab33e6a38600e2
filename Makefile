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

ENVTEST_K8S_VERSION ?= v1.37.2
ENVTEST_ETCD_VERSION ?= v3.6.16
# ENVTEST_ASSETS holds kube-apiserver, etcd and kubectl for envtest (KUBEBUILDER_ASSETS).
ENVTEST_ASSETS := $(LOCALBIN)/k8s/$(ENVTEST_K8S_VERSION)
# KUBECTL talks to the cluster for install and deploy; by default the one built with envtest's.
KUBECTL ?= $(ENVTEST_ASSETS)/kubectl

# IMAGE_ARCH is the CPU architecture of the linux image `make image` writes: Go's GOARCH by
# default (the machine's), e.g. IMAGE_ARCH=arm64 for arm64 nodes from an amd64 machine.
IMAGE_ARCH ?= $(shell go env GOARCH)
# IMAGE_TAR is the image tarball `make image` writes, for `ctr images import` or `docker load`.
IMAGE_TAR := dist/sts-operator-$(VERSION)-$(IMAGE_ARCH).tar
# IMAGE_BIN holds the linux binaries the image is made of.
IMAGE_BIN := $(LOCALBIN)/linux-$(IMAGE_ARCH)
# DEPLOY_DIR holds the kustomize overlay `make deploy` writes to set the image.
DEPLOY_DIR := .cache/deploy

GO_LDFLAGS := -s -w -X github.com/sts-operator/sts-operator/internal/version.Version=$(VERSION)

##@ General

# help prints each `##@` line as a section heading and each `target: ## text` as a target.
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^##@/ { printf "\n%s:\n", substr($$0, 5) } /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

##@ Development

.PHONY: fmt
fmt: ## Format the Go code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(STATICCHECK) ## Run gofmt check, go vet and staticcheck (built from the Go module proxy into bin/ the first time).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags e2e ./test/e2e/...
	go vet -tags examples ./test/examples/...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./test/e2e/...
	$(STATICCHECK) -tags examples ./test/examples/...

.PHONY: test
test: export KUBEBUILDER_ASSETS = $(ENVTEST_ASSETS)
test: export HELM := $(HELM)
test: deps-test lint verify-generated rules-test envtest $(HELM) ## Run all tests (unit, HTTP, envtest) with the race detector, the sts binary that the process tests start included (but for the tests measuring its memory); the protocol suite a second time on Redis. Installs its Debian packages first (hack/debian-deps.sh); the first run builds its tools from the Go module proxy into bin/.
	go test -race -count=1 -timeout 30m ./...
	STS_TEST_BACKEND=redis go test -race -count=1 -timeout 10m ./internal/sts/

.PHONY: rules-test
rules-test: ## Check the chart's alerts with promtool (Debian's prometheus package): check rules, and their tests.
	hack/rules-test.sh

.PHONY: readme-test
readme-test: ## Run the README's marked command blocks as a user would.
	hack/readme-test.sh

.PHONY: examples-test
examples-test: deps-examples-test build ## Run the JMeter plan and the Locust file of examples/ with real JMeter and Locust (Debian's, installed first: hack/debian-deps.sh) against bin/sts.
	hack/load-tools.sh $(LOCALBIN)/jmeter
	go test -tags examples -count=1 -v ./test/examples

.PHONY: golden
golden: ## Rewrite internal/specs/testdata/*.yaml, the Deployment, Service, claim, budget and NetworkPolicy built from each sample SimpleTableServer (TestGolden fails when they drift); review their diff.
	go test -count=1 -run '^TestGolden$$' ./internal/specs/ -update

.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN) ## Fail when `make generate manifests helm` would change a generated file (builds controller-gen from the Go module proxy the first time).
	hack/verify-generated.sh

# A count, not a duration: Go 1.26's fuzz coordinator can fail a duration-bounded run with
# "context deadline exceeded" when the deadline races a busy worker (go.dev/issue/75804).
FUZZTIME ?= 20000x
.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 20000 inputs) each.
	@for f in $$(grep -rl --include='*_test.go' '^func Fuzz' internal cmd); do \
	  dir=$$(dirname $$f); \
	  for t in $$(grep -oh '^func Fuzz[A-Za-z0-9_]*' $$f | cut -c6-); do \
	    echo "fuzz ./$$dir $$t ($(FUZZTIME))"; \
	    go test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./$$dir || exit 1; \
	  done; \
	done

.PHONY: adversarial
adversarial: ## Run the hostile-input tests (TestAdversarial*: 32 unauthenticated 16 MiB POSTs' peak RSS, decoding memory, ADD latency under 30 catastrophic regex waiters, a full disk on a tmpfs, 1 000 live streams that never read) and print their figures; make test runs them too, the largest at a smaller size (STS_ADVERSARIAL=1 is the full size).
	STS_ADVERSARIAL=1 go test -count=1 -v -run '^TestAdversarial' ./cmd/sts/ ./internal/...

.PHONY: mutation
mutation: export KUBEBUILDER_ASSETS = $(ENVTEST_ASSETS)
mutation: export HELM := $(HELM)
mutation: deps-test envtest $(HELM) ## Break each property of hack/mutations/ on purpose, in a copy of the tree, and fail unless the tests its patch names turn red (docs/testing.md).
	hack/mutate.sh

# FAULT_CYCLES is the nemesis cycles of make faults' campaign, shared among the backends
# (test/faults: redis, redis-sentinel, memory); FAULT_SEED, when set, replays a run's choices.
FAULT_CYCLES ?= 200
.PHONY: faults
faults: deps-faults ## Run the fault-injection campaign (test/faults): FAULT_CYCLES (200) nemesis cycles over every nemesis and both backends, about 10 minutes, and the issue-23 scenarios; write the figures table into docs/faults.md (lines lost, duplicated, REQUEST_IDs unanswered, the retrying clients' wait after each fault, p50/p99). FAULT_SEED=<seed> replays a run; make test runs each nemesis once.
	STS_FAULT_CYCLES=$(FAULT_CYCLES) STS_FAULT_SEED=$(FAULT_SEED) STS_FAULT_REPORT=$(CURDIR)/docs/faults.md \
	  STS_FAULT_COMMIT="$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- . || echo ' with changes')" \
	  go test -count=1 -v -parallel 4 -timeout 60m ./test/faults/

# BENCH_ROUNDS is how many times make bench runs each benchmark (-count): docs/benchmarks.md gives
# the least, the median and the greatest of each figure over them.
BENCH_ROUNDS ?= 3
# BENCH_DIR keeps the raw output of the last make bench and make bench-check.
BENCH_DIR := .cache/bench
.PHONY: bench
bench: export KUBEBUILDER_ASSETS = $(ENVTEST_ASSETS)
bench: deps-bench envtest ## Run every benchmark BENCH_ROUNDS (3) times, one package at a time (the operator's at 200 resources on envtest; the guard at 10M lines once), and write docs/benchmarks.md (hack/benchreport): the machine and its load, the date, the commit, each figure's min/median/max.
	@mkdir -p $(BENCH_DIR)
	@date -u +%Y-%m-%dT%H:%M:%SZ > $(BENCH_DIR)/started; cat /proc/loadavg > $(BENCH_DIR)/load-start
	go test -p 1 -timeout 120m -run '^$$' -bench . -benchmem -count $(BENCH_ROUNDS) -skip '^(BenchmarkNoCommandBlocksRedis10M|BenchmarkScale)$$' ./internal/... | tee $(BENCH_DIR)/rounds.txt
	# BenchmarkScale a fresh envtest each round: 200 Services a round fill envtest's service IP range.
	for i in $$(seq $(BENCH_ROUNDS)); do go test -count 1 -timeout 30m -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x ./internal/controller || exit 1; done | tee $(BENCH_DIR)/scale.txt
	go test -timeout 30m -run '^$$' -bench '^BenchmarkNoCommandBlocksRedis10M$$' -benchtime 1x ./internal/sts/store/redis | tee $(BENCH_DIR)/guard.txt
	go run ./hack/benchreport -rounds $(BENCH_ROUNDS) -started "$$(cat $(BENCH_DIR)/started)" -load-start "$$(cat $(BENCH_DIR)/load-start)" -o docs/benchmarks.md $(BENCH_DIR)/rounds.txt $(BENCH_DIR)/scale.txt $(BENCH_DIR)/guard.txt

.PHONY: bench-check
bench-check: export KUBEBUILDER_ASSETS = $(ENVTEST_ASSETS)
bench-check: deps-bench envtest ## Run every benchmark once (-benchtime 1x), with its assertions and no timing floor, so that none can rot, and write their report to .cache/bench/check.md (hack/benchreport reads real output): CI runs it. The guard at 10M lines is make bench's alone (minutes).
	@mkdir -p $(BENCH_DIR)
	go test -run '^$$' -bench . -benchtime 1x -skip '^BenchmarkNoCommandBlocksRedis10M$$' ./... | tee $(BENCH_DIR)/check.txt
	go run ./hack/benchreport -o $(BENCH_DIR)/check.md $(BENCH_DIR)/check.txt

.PHONY: screenshots
screenshots: ## Take the README's pictures of the web page (docs/ui/overview.png, docs/ui/list.png) in headless Chromium during a short drain.
	STS_SCREENSHOTS_DIR=$(CURDIR)/docs/ui go test -count=1 -run '^TestScreenshots$$' ./internal/sts/webui/

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the API's deepcopy functions (builds controller-gen from the Go module proxy the first time).
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD (config/crd/bases) and the RBAC role (config/rbac) from the markers (controller-gen, as above).
	$(CONTROLLER_GEN) crd rbac:roleName=manager-role paths=./api/... paths=./internal/controller/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

##@ Build

.PHONY: build
build: ## Build bin/manager and bin/sts.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/sts ./cmd/sts
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/manager ./cmd/manager

.PHONY: image
image: ## Write the linux/IMAGE_ARCH image (manager + sts, non-root) as IMAGE_TAR, a tarball both docker-archive and OCI layout; no Docker engine needed.
	GOOS=linux GOARCH=$(IMAGE_ARCH) CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(IMAGE_BIN)/ ./cmd/manager ./cmd/sts
	GOOS=$$(go env GOHOSTOS) GOARCH=$$(go env GOHOSTARCH) go run ./hack/imagebuild -o $(IMAGE_TAR) -tag $(IMG) -version $(VERSION) -arch $(IMAGE_ARCH) \
		-manager $(IMAGE_BIN)/manager -sts $(IMAGE_BIN)/sts
	@echo $(IMAGE_TAR)

.PHONY: image-check
image-check: image ## Build the image tarball and check it: /manager entrypoint, non-root user, both binaries.
	hack/image-check.sh $(IMAGE_TAR) $(IMAGE_ARCH)

.PHONY: run-sts
run-sts: build ## Run the table server locally on 127.0.0.1:9191 with ./examples/data as dataset directory.
	$(LOCALBIN)/sts --bind 127.0.0.1 --port 9191 --dataset-dir ./examples/data

##@ Packaging and deployment

.PHONY: helm
helm: manifests ## Copy the generated CRD and RBAC rules into the Helm chart's templates.
	hack/chart-sync.sh

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint the Helm chart and render it with the default values (builds Helm from the Go module proxy the first time).
	$(HELM) lint --strict charts/sts-operator
	$(HELM) template sts charts/sts-operator >/dev/null

.PHONY: chart-test
chart-test: $(HELM) ## Check the chart: lint, CRD/RBAC copies match config/, rendered objects, refused values (Helm, as above).
	HELM=$(HELM) hack/chart-test.sh

.PHONY: install
install: kubectl ## Install the CRD into the cluster of the current kubeconfig, with KUBECTL (built from the Go module proxy the first time unless KUBECTL is set).
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: kubectl ## Delete the CRD from the cluster, and with it every SimpleTableServer (KUBECTL, as for install).
	$(KUBECTL) delete --ignore-not-found -k config/crd

.PHONY: deploy
deploy: kubectl ## Deploy the operator (config/default, namespace sts-operator-system) running image IMG, with KUBECTL (as for install); the nodes must be able to pull IMG.
	@mkdir -p $(DEPLOY_DIR)
	@printf '%s\n' \
		'# Written by make deploy: config/default with the manager and table-server image $(IMG).' \
		'apiVersion: kustomize.config.k8s.io/v1beta1' \
		'kind: Kustomization' \
		'resources: [../../config/default]' \
		'patches:' \
		'  - target: {kind: Deployment, labelSelector: control-plane=controller-manager}' \
		'    patch: |-' \
		'      apiVersion: apps/v1' \
		'      kind: Deployment' \
		'      metadata: {name: controller-manager}' \
		'      spec: {template: {spec: {containers: [{name: manager, image: "$(IMG)", env: [{name: STS_IMAGE, value: "$(IMG)"}]}]}}}' \
		> $(DEPLOY_DIR)/kustomization.yaml
	$(KUBECTL) apply --server-side -k $(DEPLOY_DIR)

.PHONY: undeploy
undeploy: kubectl ## Remove the operator and the CRD (and so every SimpleTableServer) from the cluster (KUBECTL, as for install).
	$(KUBECTL) delete --ignore-not-found -k config/default

# DIST_VERSION is the version `make dist` releases: the chart's appVersion unless set.
DIST_VERSION ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"* *$$/\1/p' charts/sts-operator/Chart.yaml)
# DIST_ARCHES are the CPU architectures of the images `make dist` writes.
DIST_ARCHES ?= amd64 arm64
# DIST_NAMESPACE and DIST_REPOSITORY are the operator's namespace and image repository in
# dist/install.yaml (the repository also tags the image tarballs).
DIST_NAMESPACE ?= sts-system
DIST_REPOSITORY ?= sts-operator

.PHONY: dist
dist: $(HELM) kubectl ## Write the release DIST_VERSION (the chart's appVersion) into dist/: install.yaml, the packaged chart, the images of DIST_ARCHES, SHA256SUMS. Builds Helm and kubectl from the Go module proxy the first time.
	@VERSION='$(DIST_VERSION)' ARCHES='$(DIST_ARCHES)' NAMESPACE='$(DIST_NAMESPACE)' REPOSITORY='$(DIST_REPOSITORY)' \
		HELM='$(HELM)' KUBECTL='$(KUBECTL)' hack/dist.sh

.PHONY: dist-test
dist-test: export KUBEBUILDER_ASSETS = $(ENVTEST_ASSETS)
dist-test: dist envtest ## Check dist/: SHA256SUMS verifies, the packaged chart lints and renders, each image passes image-check, install.yaml applied to a real API server (envtest) installs the operator.
	cd dist && sha256sum -c SHA256SUMS
	$(HELM) lint --strict dist/sts-operator-$(DIST_VERSION).tgz
	$(HELM) template sts-operator dist/sts-operator-$(DIST_VERSION).tgz --namespace $(DIST_NAMESPACE) >/dev/null
	for arch in $(DIST_ARCHES); do hack/image-check.sh dist/sts-operator-$(DIST_VERSION)-$$arch.tar $$arch; done
	STS_INSTALL_YAML=$(CURDIR)/dist/install.yaml go test -count=1 -run '^TestInstallYAML' ./test/dist/

##@ Local cluster and end to end (hack/cluster: Linux and root; see hack/cluster/README.md)

# CLUSTER_ENV passes what the scripts build and install with.
CLUSTER_ENV = MAKE='$(MAKE)' VERSION='$(VERSION)' IMG='$(IMG)' IMAGE_TAR='$(IMAGE_TAR)' HELM='$(HELM)'

.PHONY: cluster-up
cluster-up: ## Start the local single-node cluster (components built from the Go module proxy); KUBECONFIG=.cache/cluster/kubeconfig.
	hack/cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and undo its changes to the machine.
	hack/cluster/down.sh

.PHONY: e2e
e2e: ## Run the end-to-end suite on the local cluster, or on KUBECONFIG's cluster; skipped (exit 0) where neither can run, a failure with STS_REQUIRE_ALL=1 (CI).
	@$(CLUSTER_ENV) hack/cluster/e2e.sh

.PHONY: demo
demo: ## Start the local cluster with the operator, the samples and a load generator, and show what to look at.
	@$(CLUSTER_ENV) hack/cluster/demo.sh

.PHONY: demo-down
demo-down: cluster-down ## Stop the demo and the local cluster.

##@ Tools

# deps-TARGET is the first prerequisite of TARGET: hack/debian-deps.sh installs the Debian
# packages TARGET needs when they are missing (as root with apt-get), or stops at once with the
# apt-get line to run. make demo and make e2e run it from their scripts (hack/cluster), after
# their checks for root and for the local cluster.
DEBIAN_DEPS_TARGETS := test examples-test bench faults
.PHONY: $(addprefix deps-,$(DEBIAN_DEPS_TARGETS))
$(addprefix deps-,$(DEBIAN_DEPS_TARGETS)): deps-%:
	@hack/debian-deps.sh $*

.PHONY: kubectl
kubectl: ## Build KUBECTL from the Go module proxy, unless KUBECTL names another kubectl.
	@if [ "$(KUBECTL)" = "$(ENVTEST_ASSETS)/kubectl" ]; then \
		K8S_VERSION=$(ENVTEST_K8S_VERSION) ENVTEST_BIN_DIR=$(LOCALBIN)/k8s hack/envtest.sh kubectl >/dev/null; \
	fi

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

$(CONTROLLER_GEN): | $(LOCALBIN)
	@echo "building controller-gen $(CONTROLLER_GEN_VERSION) from the Go module proxy into $(@:$(CURDIR)/%=%)"
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(STATICCHECK): | $(LOCALBIN)
	@echo "building staticcheck $(STATICCHECK_VERSION) from the Go module proxy into $(@:$(CURDIR)/%=%)"
	GOBIN=$(LOCALBIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(LOCALBIN)/staticcheck $@

.PHONY: envtest
envtest: ## Build kube-apiserver, etcd and kubectl for envtest from the Go module proxy into ENVTEST_ASSETS.
	K8S_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ENVTEST_ETCD_VERSION) ENVTEST_BIN_DIR=$(LOCALBIN)/k8s hack/envtest.sh >/dev/null

$(HELM): | $(LOCALBIN)
	@echo "building helm $(HELM_VERSION) from the Go module proxy into $(@:$(CURDIR)/%=%)"
	GOBIN=$(LOCALBIN) go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/helm $@
