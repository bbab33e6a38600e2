// Command manager is the sts-operator: it runs a table server for every SimpleTableServer
// resource and reports the server's lists in the resource's status.
package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/controller"
	"github.com/sts-operator/sts-operator/internal/specs"
	"github.com/sts-operator/sts-operator/internal/version"
)

func main() {
	opts, err := parseOptions(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		ctrl.Log.Error(err, "Manager failed")
		os.Exit(1)
	}
}

// options are the manager's settings from its flags.
type options struct {
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	probeAddr               string
	watchNamespaces         []string
	tableServerDefaults     *specs.Defaults
	leaderElect             bool
	stsImage                string
	namespace               string
	defaultRedis            *stsv1alpha1.RedisConnection
	serverTimeout           time.Duration
	maxConcurrentReconciles int
	zap                     zap.Options
}

// parseOptions reads the flags; --sts-image defaults to the STS_IMAGE environment variable,
// which the Helm chart sets to the operator's own image.
func parseOptions(args []string, getenv func(string) string, output io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "", "address of the Prometheus metrics endpoint; 0 turns it off (default :8443, or :8080 with --metrics-secure=false)")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to clients whose bearer token the API server authenticates and allows to get /metrics (the metrics-reader ClusterRole); false: plain HTTP to anyone")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "", "directory holding tls.crt and tls.key for the metrics endpoint, re-read when they change; empty: a self-signed certificate made at startup")
	fs.Func("watch-namespaces", "comma-separated namespaces whose SimpleTableServers the operator runs, and the only ones it reads and writes; empty (the default): every namespace", func(v string) error {
		namespaces, err := parseNamespaces(v)
		o.watchNamespaces = namespaces
		return err
	})
	fs.Func("table-server-defaults", `JSON of the pod settings of table servers whose resource sets none: imagePullPolicy, imagePullSecrets, resources, nodeSelector, tolerations, affinity, priorityClassName, topologySpreadConstraints, podLabels, podAnnotations, service ({type, annotations}), podSecurityContext, securityContext, e.g. {"nodeSelector":{"pool":"load"},"resources":{"limits":{"memory":"2Gi"}}}`, func(v string) error {
		d, err := parseTableServerDefaults(v)
		o.tableServerDefaults = d
		return err
	})
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader, so that only one of several replicas reconciles")
	fs.StringVar(&o.stsImage, "sts-image", getenv("STS_IMAGE"), "image of new table servers whose resource names none; running ones keep theirs (default $STS_IMAGE)")
	fs.StringVar(&o.namespace, "operator-namespace", getenv("POD_NAMESPACE"), "namespace the operator runs in, which table servers' NetworkPolicies let in (default $POD_NAMESPACE, which the chart sets)")
	fs.Func("default-redis", `Redis of resources whose Redis backend names none, as JSON with the fields of spec.backend.redis's connection, e.g. {"address":"redis.redis.svc:6379","credentialsSecret":{"name":"redis"}}; a Secret it names is looked up in each resource's namespace`, func(v string) error {
		var c stsv1alpha1.RedisConnection
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return fmt.Errorf("not a Redis connection: %w", err)
		}
		if (c.Address == "") == (c.Sentinel == nil) {
			return errors.New("name an address or a sentinel, and not both")
		}
		o.defaultRedis = &c
		return nil
	})
	fs.DurationVar(&o.serverTimeout, "server-timeout", 5*time.Second, "time limit of each call to a table server")
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 4, "resources reconciled at once")
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.stsImage == "":
		return nil, errors.New("no table server image: set --sts-image or STS_IMAGE")
	case o.serverTimeout <= 0:
		return nil, errors.New("--server-timeout must be positive")
	case o.maxConcurrentReconciles < 1:
		return nil, errors.New("--max-concurrent-reconciles must be at least 1")
	case o.metricsCertDir != "" && !o.metricsSecure:
		return nil, errors.New("--metrics-cert-dir needs --metrics-secure: plain HTTP has no certificate")
	}
	if o.metricsAddr == "" {
		o.metricsAddr = ":8443"
		if !o.metricsSecure {
			o.metricsAddr = ":8080"
		}
	}
	return o, nil
}

// parseNamespaces reads --watch-namespaces: names of namespaces, each once.
func parseNamespaces(v string) ([]string, error) {
	if v == "" {
		return nil, nil // every namespace
	}
	var namespaces []string
	for _, ns := range strings.Split(v, ",") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
		}
		if slices.Contains(namespaces, ns) {
			return nil, fmt.Errorf("namespace %q is named twice", ns)
		}
		namespaces = append(namespaces, ns)
	}
	return namespaces, nil
}

// defaults are what the reconciler fills a resource's unset fields with: the pod settings of
// --table-server-defaults and the Redis of --default-redis (nil: neither flag).
func (o *options) defaults() *specs.Defaults {
	if o.defaultRedis == nil {
		return o.tableServerDefaults
	}
	d := &specs.Defaults{}
	if o.tableServerDefaults != nil {
		*d = *o.tableServerDefaults
	}
	d.Redis = o.defaultRedis
	return d
}

// parseTableServerDefaults reads --table-server-defaults strictly: a misspelt field would
// otherwise be a default silently not applied.
func parseTableServerDefaults(v string) (*specs.Defaults, error) {
	var d specs.Defaults
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not table-server defaults: %w", err)
	}
	switch d.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
	default:
		return nil, fmt.Errorf("imagePullPolicy %q: want Always, Never or IfNotPresent", d.ImagePullPolicy)
	}
	switch d.Service.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		return nil, fmt.Errorf("service.type %q: want ClusterIP, NodePort or LoadBalancer", d.Service.Type)
	}
	if errs := validation.IsDNS1123Subdomain(d.PriorityClassName); d.PriorityClassName != "" && len(errs) > 0 {
		return nil, fmt.Errorf("priorityClassName %q: %s", d.PriorityClassName, strings.Join(errs, "; "))
	}
	return &d, nil
}

func run(o *options) error {
	logger := zap.New(zap.UseFlagOptions(&o.zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go logs the same way
	log := ctrl.Log.WithName("setup")
	// sts_build_info beside controller-runtime's metrics, as on every table server.
	ctrlmetrics.Registry.MustRegister(version.Collector())
	mgr, err := newManager(ctrl.GetConfigOrDie(), o)
	if err != nil {
		return err
	}
	log.Info("Starting the manager", "version", version.Version, "stsImage", o.stsImage, "watchNamespaces", o.watchNamespaces)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// newManager sets up the manager and its reconciler on cfg's API server, as the options say.
func newManager(cfg *rest.Config, o *options) (ctrl.Manager, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	metrics, err := metricsOptions(o)
	if err != nil {
		return nil, err
	}
	cacheOptions := cache.Options{ByObject: controller.CacheByObject()}
	if len(o.watchNamespaces) > 0 {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.watchNamespaces {
			cacheOptions.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metrics,
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionID:       "sts-operator.sts.tableserver.dev",
		Cache:                  cacheOptions,
	})
	if err != nil {
		return nil, fmt.Errorf("while creating the manager: %w", err)
	}
	r := &controller.SimpleTableServerReconciler{
		Client:       mgr.GetClient(),
		Recorder:     mgr.GetEventRecorder("sts-operator"),
		DefaultImage: o.stsImage,
		Endpoints:    controller.ServiceEndpoints{},
		HTTPClient:   controller.NewHTTPClient(o.serverTimeout),
		APIReader:    mgr.GetAPIReader(),
		Defaults:     o.defaults(),
		Namespace:    o.namespace,
	}
	if err := r.SetupWithManager(mgr, crcontroller.Options{MaxConcurrentReconciles: o.maxConcurrentReconciles}); err != nil {
		return nil, fmt.Errorf("while setting up the controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// metricsOptions serve the metrics as --metrics-secure says.
func metricsOptions(o *options) (metricsserver.Options, error) {
	metrics := metricsserver.Options{BindAddress: o.metricsAddr}
	if !o.metricsSecure {
		return metrics, nil
	}
	metrics.SecureServing = true
	// Who may read the metrics is the API server's to say: a TokenReview authenticates the
	// scraper, a SubjectAccessReview asks whether it may get /metrics.
	metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/1.1 only: HTTP/2's stream resets let a client that is refused still load the server
	// (CVE-2023-44487), and a scrape gains nothing from HTTP/2.
	metrics.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	if o.metricsCertDir != "" {
		// controller-runtime falls back to a self-signed certificate when the files are missing:
		// a mounted Secret with other keys would go unnoticed.
		for _, f := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(o.metricsCertDir, f)); err != nil {
				return metrics, fmt.Errorf("--metrics-cert-dir: %w", err)
			}
		}
		metrics.CertDir = o.metricsCertDir
	}
	return metrics, nil
}

// newScheme holds the built-in types and SimpleTableServer.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, stsv1alpha1.AddToScheme(scheme)
}
