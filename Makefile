# Windlass. Run `make help` for the targets.
SHELL := /bin/bash
export GOFLAGS := -buildvcs=false
# Static binaries, as the image builds them (deploy/docker/Dockerfile): with
# cgo, kustomize's plugin loader (stdlib `plugin`) makes the linker export
# every symbol, and each windlass process starts 70 MB larger. No package
# Windlass uses needs cgo; the test-bed build keeps its own setting.
export CGO_ENABLED := 0
TOOLS := bin/tools
WORKFLOWCHECK_VERSION := v0.6.0
STATICCHECK_VERSION := v0.8.2
# Reference renderers the golden tests compare against, at the versions of
# the libraries in go.mod.
HELM_VERSION := v4.3.1
KUSTOMIZE_VERSION := v5.8.2
JSONNET_VERSION := v0.22.0
REF_TOOLS := $(TOOLS)/helm-$(HELM_VERSION) $(TOOLS)/kustomize-$(KUSTOMIZE_VERSION) $(TOOLS)/jsonnet-$(JSONNET_VERSION)
DEV_CLUSTER := .windlass/testbed
# The web UI's inputs: `make ui` rebuilds web/bundle/dist when one is newer
# than its stamp; make test fails on a stale or (with Node.js) missing bundle.
UI_SOURCES := $(shell find web/src web/public -type f 2>/dev/null) web/index.html web/package.json web/package-lock.json web/tsconfig.json web/vite.config.ts
UI_STAMP := web/bundle/dist/build-info.json

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

deps: ## install the system packages the tests and `windlass dev` need (redis-server, git)
	@hack/deps.sh

testbed: ## build the test-bed binaries (etcd, kube-*, kwok) into bin/testbed (one-time, ~9 min cold)
	@hack/testbed/build.sh

build: ui ## build bin/windlass (with the web UI)
	go build -o bin/windlass ./cmd/windlass

run: deps testbed build ## run `windlass dev`: embedded Temporal + UI, Redis, worker and API (starts a local cluster unless $KUBECONFIG is set)
	@if [ -z "$$KUBECONFIG" ]; then \
	  echo "run: KUBECONFIG is not set: starting the local test cluster in $(DEV_CLUSTER)"; \
	  go run ./hack/cluster up --dir $(DEV_CLUSTER) >/dev/null && \
	  KUBECONFIG=$(DEV_CLUSTER)/admin.kubeconfig exec bin/windlass dev; \
	else exec bin/windlass dev; fi

cluster-up: testbed ## start the local test cluster (kube-apiserver, etcd, KCM, scheduler, kwok) in .windlass/testbed
	go run ./hack/cluster up --dir $(DEV_CLUSTER)

cluster-down: ## stop the local test cluster
	go run ./hack/cluster down --dir $(DEV_CLUSTER)

test: deps testbed reftools ui ## unit, workflow and e2e tests against the real test bed, with a summary
	@hack/test.sh

test-unit: ## unit and workflow tests only (no cluster)
	go test -count=1 ./internal/appspec/... ./internal/manifest/... ./internal/health/... ./internal/failure/... ./workflows/... ./hack/testsum/...

test-e2e: deps testbed ## the end-to-end tests only
	@PKGS=./test/e2e/... hack/test.sh

reftools: $(REF_TOOLS) ## build the reference helm, kustomize and jsonnet CLIs into bin/tools (one-time)

# Each tool is installed from its own module at a pinned version, then
# linked under a versioned name so that a version bump rebuilds it.
$(TOOLS)/helm-$(HELM_VERSION):
	GOBIN=$(CURDIR)/$(TOOLS)/helm.d go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(TOOLS)/helm.d/helm $@ && ln -sf $(notdir $@) $(TOOLS)/helm

$(TOOLS)/kustomize-$(KUSTOMIZE_VERSION):
	GOBIN=$(CURDIR)/$(TOOLS)/kustomize.d go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)
	mv $(TOOLS)/kustomize.d/kustomize $@ && ln -sf $(notdir $@) $(TOOLS)/kustomize

$(TOOLS)/jsonnet-$(JSONNET_VERSION):
	GOBIN=$(CURDIR)/$(TOOLS)/jsonnet.d go install github.com/google/go-jsonnet/cmd/jsonnet@$(JSONNET_VERSION)
	mv $(TOOLS)/jsonnet.d/jsonnet $@ && ln -sf $(notdir $@) $(TOOLS)/jsonnet

RELEASE := $(shell sed -n 's/^const Version = "\(.*\)"/\1/p' internal/version/version.go)

histories: deps testbed ## capture this release's workflow histories, which the replay test replays (docs/architecture.md)
	@rm -rf workflows/testdata/histories/$(RELEASE)
	@WINDLASS_UPDATE_HISTORIES=$(CURDIR)/workflows/testdata/histories/$(RELEASE) PKGS=./test/e2e/... hack/test.sh

$(TOOLS)/workflowcheck:
	GOBIN=$(CURDIR)/$(TOOLS) go install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

workflowcheck: $(TOOLS)/workflowcheck ## prove the workflows are deterministic
	$(TOOLS)/workflowcheck ./workflows/...

$(TOOLS)/staticcheck-$(STATICCHECK_VERSION):
	GOBIN=$(CURDIR)/$(TOOLS)/staticcheck.d go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(TOOLS)/staticcheck.d/staticcheck $@

lint: $(TOOLS)/staticcheck-$(STATICCHECK_VERSION) ## gofmt, go vet and staticcheck (also of the production build, -tags nodevserver)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags nodevserver ./cmd/windlass/... ./internal/temporalx/
	$(TOOLS)/staticcheck-$(STATICCHECK_VERSION) ./...
	$(TOOLS)/staticcheck-$(STATICCHECK_VERSION) -tags nodevserver ./cmd/windlass/... ./internal/temporalx/

bench: deps testbed ## benchmarks B1-B7 (test/bench; B8=1: the 10,000-app B8): own test bed, Temporal, server, worker; bench-results.json
	@hack/bench.sh

scale: deps testbed ## scale-out proof (test/scaleout) with 200 apps (WINDLASS_SCALE_APPS=N); measurements in .cache/scale-report.json
	@mkdir -p .cache && WINDLASS_SCALE_APPS=$${WINDLASS_SCALE_APPS:-200} WINDLASS_SCALE_REPORT=$${WINDLASS_SCALE_REPORT:-$(CURDIR)/.cache/scale-report.json} PKGS=./test/scaleout/... hack/test.sh

.PHONY: scale

IMAGE ?= windlass:dev

image: ## build the container image (deploy/docker/Dockerfile) as $(IMAGE), when a Docker engine answers
	@if docker info >/dev/null 2>&1; then \
	  docker build -f deploy/docker/Dockerfile -t $(IMAGE) .; \
	else \
	  echo "image: no Docker engine answers (docker info failed), so no image was built; the docker client alone cannot build: run make image where an engine runs"; \
	fi

.PHONY: image

ui: $(UI_STAMP) ## build the web UI into web/bundle/dist, embedded by bin/windlass (needs Node.js 20.19+)

$(UI_STAMP): $(UI_SOURCES)
	@hack/ui.sh

# With Node.js, the UI tests must find a fresh bundle rather than skip.
test: export WINDLASS_UI_REQUIRED := $(if $(shell command -v node),1,)

.PHONY: help deps testbed reftools histories build run cluster-up cluster-down test test-unit test-e2e workflowcheck lint bench ui
