// Command manager is the sts-operator: it runs a table server for every SimpleTableServer
// resource and reports the server's lists in the resource's status.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/controllers"
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
	probeAddr               string
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
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 turns it off")
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
	}
	return o, nil
}

func run(o *options) error {
	logger := zap.New(zap.UseFlagOptions(&o.zap))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go logs the same way
	log := ctrl.Log.WithName("setup")
	// sts_build_info beside controller-runtime's metrics, as on every table server.
	ctrlmetrics.Registry.MustRegister(version.Collector())

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := stsv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionID:       "sts-operator.sts.tableserver.dev",
		Cache:                  cache.Options{ByObject: controllers.CacheByObject()},
	})
	if err != nil {
		return fmt.Errorf("while creating the manager: %w", err)
	}
	r := &controllers.SimpleTableServerReconciler{
		Client:       mgr.GetClient(),
		Recorder:     mgr.GetEventRecorder("sts-operator"),
		DefaultImage: o.stsImage,
		Endpoints:    controllers.ServiceEndpoints{},
		HTTPClient:   controllers.NewHTTPClient(o.serverTimeout),
		APIReader:    mgr.GetAPIReader(),
		DefaultRedis: o.defaultRedis,
		Namespace:    o.namespace,
	}
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: o.maxConcurrentReconciles}); err != nil {
		return fmt.Errorf("while setting up the controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting the manager", "version", version.Version, "stsImage", o.stsImage)
	return mgr.Start(ctrl.SetupSignalHandler())
}
