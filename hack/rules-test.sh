#!/usr/bin/env bash
# Checks the chart's Prometheus alerts (charts/sts-operator/monitoring/rules.yaml) with promtool:
# `promtool check rules` (syntax, PromQL, templates) and `promtool test rules` with
# rules.test.yaml (each alert firing, and not firing). make test runs it before the Go tests.
# promtool comes from Debian's prometheus package, which make test installs first
# (hack/debian-deps.sh test).
set -euo pipefail

cd "$(dirname "$0")/../charts/sts-operator/monitoring"
PROMTOOL=${PROMTOOL:-promtool}
if ! command -v "$PROMTOOL" >/dev/null 2>&1; then
  echo "rules-test: no promtool: it is Debian's prometheus package (hack/debian-deps.sh test installs it)" >&2
  exit 1
fi

"$PROMTOOL" check rules rules.yaml
"$PROMTOOL" test rules rules.test.yaml
