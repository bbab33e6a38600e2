// Package monitoring holds the tests of the chart's monitoring files, charts/sts-operator/monitoring:
// every metric the Grafana dashboard (dashboard.json) and the alerts (rules.yaml) name is one a
// running table server or the operator exports, or one of the few they take from elsewhere
// (Prometheus, kube-state-metrics); the dashboard is Grafana JSON whose queries all follow its
// pickers and parse as PromQL; rules.test.yaml tests every alert both ways. hack/rules-test.sh
// runs promtool on the rules themselves.
package monitoring
