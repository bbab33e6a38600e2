#!/usr/bin/env bash
# Prints install.yaml: the operator exactly as `helm install sts-operator charts/sts-operator
# --namespace NAMESPACE` installs it with the chart's default values (the CRD, the ServiceAccount,
# the RBAC rules, the manager's Deployment and metrics Service), every namespaced object put in
# NAMESPACE, preceded by that Namespace, for one `kubectl apply --server-side -f install.yaml`.
# The chart is the one source: this only renders it. `make dist` writes dist/install.yaml with
# it; test/dist's test applies its output to a real API server.
#
#   hack/install-yaml.sh VERSION [NAMESPACE] [REPOSITORY]
#
# VERSION is the image tag, NAMESPACE the operator's (default sts-system, the README's), and
# REPOSITORY the image's (default: the chart's, sts-operator). Environment: HELM and KUBECTL,
# the pinned ones the Makefile builds.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: hack/install-yaml.sh VERSION [NAMESPACE] [REPOSITORY]}
namespace=${2:-sts-system}
repository=${3:-}
HELM=${HELM:?HELM must name the helm binary}
KUBECTL=${KUBECTL:?KUBECTL must name the kubectl binary}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

args=(--set "image.tag=$version")
[ -z "$repository" ] || args+=(--set "image.repository=$repository")
"$HELM" template sts-operator charts/sts-operator --namespace "$namespace" "${args[@]}" >"$work/chart.yaml"

# The Namespace, fit for the restricted Pod Security level as the manager is (config/manager).
cat >"$work/namespace.yaml" <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: $namespace
  labels:
    app.kubernetes.io/name: sts-operator
    pod-security.kubernetes.io/enforce: restricted
YAML

# helm install puts the chart's namespaced objects into the release namespace, but their
# templates name none: kubectl apply would put them into the current context's namespace.
# kustomize's NamespaceTransformer sets it where unset (unsetOnly keeps an object the chart
# places elsewhere) and orders the objects so that the Namespace and the CRD come first.
cat >"$work/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [namespace.yaml, chart.yaml]
transformers:
  - |-
    apiVersion: builtin
    kind: NamespaceTransformer
    metadata:
      name: release-namespace
      namespace: $namespace
    unsetOnly: true
    setRoleBindingSubjects: none
YAML

echo "# sts-operator $version: kubectl apply --server-side -f install.yaml"
echo "# Rendered from charts/sts-operator (default values, namespace $namespace) by hack/install-yaml.sh."
"$KUBECTL" kustomize "$work"
