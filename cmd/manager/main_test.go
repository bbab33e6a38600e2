package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sts-operator/sts-operator/internal/specs"
)

// parsed parses args; with wantErr, it checks that parsing fails saying so and returns nil.
func parsed(t *testing.T, args []string, getenv func(string) string, wantErr string) *options {
	t.Helper()
	o, err := parseOptions(args, getenv, io.Discard)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want one mentioning %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestParseOptions(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	tests := map[string]struct {
		args      []string
		env       map[string]string
		wantImage string
		wantRedis string // the default Redis's address or sentinel master
		wantErr   string
	}{
		"image from the chart's variable": {env: map[string]string{"STS_IMAGE": "sts-operator:1.0"}, wantImage: "sts-operator:1.0"},
		"flag over variable": {args: []string{"--sts-image", "mine:2"}, env: map[string]string{"STS_IMAGE": "sts-operator:1.0"},
			wantImage: "mine:2"},
		"no image":           {wantErr: "set --sts-image or STS_IMAGE"},
		"zero timeout":       {args: []string{"--sts-image", "x:1", "--server-timeout", "0s"}, wantErr: "--server-timeout"},
		"stray argument":     {args: []string{"--sts-image", "x:1", "extra"}, wantErr: "unexpected arguments"},
		"unknown flag":       {args: []string{"--nope"}, wantErr: "not defined"},
		"zap flags accepted": {args: []string{"--sts-image", "x:1", "--zap-log-level", "debug"}, wantImage: "x:1"},
		"default Redis": {args: []string{"--sts-image", "x:1", `--default-redis={"address":"redis.redis.svc:6379","credentialsSecret":{"name":"redis"}}`},
			wantImage: "x:1", wantRedis: "redis.redis.svc:6379"},
		"default Redis by Sentinel": {args: []string{"--sts-image", "x:1", `--default-redis={"sentinel":{"masterName":"m","addresses":["s:26379"]}}`},
			wantImage: "x:1", wantRedis: "m"},
		"default Redis without address": {args: []string{"--sts-image", "x:1", `--default-redis={"database":1}`}, wantErr: "name an address or a sentinel"},
		"default Redis misspelt":        {args: []string{"--sts-image", "x:1", `--default-redis={"adress":"r:6379"}`}, wantErr: `unknown field "adress"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := parsed(t, tc.args, env(tc.env), tc.wantErr)
			if o == nil {
				return
			}
			if o.stsImage != tc.wantImage || o.serverTimeout != 5*time.Second || o.probeAddr != ":8081" || o.leaderElect {
				t.Errorf("options %+v", o)
			}
			redis := ""
			if r := o.defaultRedis; r != nil && r.Sentinel != nil {
				redis = r.Sentinel.MasterName
			} else if r != nil {
				redis = r.Address
			}
			if redis != tc.wantRedis {
				t.Errorf("default Redis %q, want %q", redis, tc.wantRedis)
			}
		})
	}
}

func TestParseSecurityAndScopeOptions(t *testing.T) {
	image := "--sts-image=x:1"
	tests := map[string]struct {
		args           []string
		wantMetrics    string
		wantSecure     bool
		wantNamespaces []string
		wantDefaults   func(*specs.Defaults) bool
		wantErr        string
	}{
		"metrics over HTTPS by default": {args: []string{image}, wantMetrics: ":8443", wantSecure: true},
		"plain HTTP only when asked":    {args: []string{image, "--metrics-secure=false"}, wantMetrics: ":8080"},
		"an address of one's own":       {args: []string{image, "--metrics-bind-address=:9443"}, wantMetrics: ":9443", wantSecure: true},
		"a certificate over HTTP":       {args: []string{image, "--metrics-secure=false", "--metrics-cert-dir=/certs"}, wantErr: "--metrics-cert-dir needs --metrics-secure"},
		"watched namespaces": {args: []string{image, "--watch-namespaces=team-a, team-b"}, wantMetrics: ":8443", wantSecure: true,
			wantNamespaces: []string{"team-a", "team-b"}},
		"every namespace":            {args: []string{image, "--watch-namespaces="}, wantMetrics: ":8443", wantSecure: true},
		"a namespace that cannot be": {args: []string{image, "--watch-namespaces=team-a,Team_B"}, wantErr: `namespace "Team_B"`},
		"an empty name in the list":  {args: []string{image, "--watch-namespaces=team-a,,team-b"}, wantErr: `namespace ""`},
		"a namespace named twice":    {args: []string{image, "--watch-namespaces=team-a,team-a"}, wantErr: "named twice"},
		"table-server defaults": {args: []string{image, `--table-server-defaults={"nodeSelector":{"pool":"load"},"resources":{"limits":{"memory":"2Gi"}},"service":{"type":"LoadBalancer"}}`},
			wantMetrics: ":8443", wantSecure: true, wantDefaults: func(d *specs.Defaults) bool {
				return d.NodeSelector["pool"] == "load" && d.Resources.Limits.Memory().String() == "2Gi" && d.Service.Type == "LoadBalancer"
			}},
		"defaults that are no JSON":      {args: []string{image, `--table-server-defaults={nodeSelector: {pool: load}}`}, wantErr: "not table-server defaults: invalid character"},
		"defaults with a misspelt field": {args: []string{image, `--table-server-defaults={"nodeSelectors":{"pool":"load"}}`}, wantErr: `unknown field "nodeSelectors"`},
		"defaults naming the image":      {args: []string{image, `--table-server-defaults={"image":"sts:2"}`}, wantErr: `unknown field "image"`},
		"defaults with a bad quantity":   {args: []string{image, `--table-server-defaults={"resources":{"limits":{"memory":"lots"}}}`}, wantErr: "quantities must match"},
		"defaults with a bad pull policy": {args: []string{image, `--table-server-defaults={"imagePullPolicy":"Sometimes"}`},
			wantErr: `imagePullPolicy "Sometimes": want Always, Never or IfNotPresent`},
		"defaults with a bad service type": {args: []string{image, `--table-server-defaults={"service":{"type":"ExternalName"}}`},
			wantErr: `service.type "ExternalName"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := parsed(t, tc.args, func(string) string { return "" }, tc.wantErr)
			if o == nil {
				return
			}
			if o.metricsAddr != tc.wantMetrics || o.metricsSecure != tc.wantSecure || !slices.Equal(o.watchNamespaces, tc.wantNamespaces) {
				t.Errorf("metrics %q secure %t, namespaces %q", o.metricsAddr, o.metricsSecure, o.watchNamespaces)
			}
			if (tc.wantDefaults == nil) != (o.tableServerDefaults == nil) || tc.wantDefaults != nil && !tc.wantDefaults(o.tableServerDefaults) {
				t.Errorf("table-server defaults %+v", o.tableServerDefaults)
			}
		})
	}
}

// The reconciler's one Defaults holds both flags, whichever comes first.
func TestDefaultsJoinBothFlags(t *testing.T) {
	redis := `--default-redis={"address":"r:6379"}`
	pods := `--table-server-defaults={"nodeSelector":{"pool":"load"}}`
	for _, args := range [][]string{{redis, pods}, {pods, redis}} {
		o := parsed(t, append([]string{"--sts-image=x:1"}, args...), func(string) string { return "" }, "")
		d := o.defaults()
		if d == nil || d.Redis == nil || d.Redis.Address != "r:6379" || d.NodeSelector["pool"] != "load" {
			t.Errorf("%q: defaults %+v", args, d)
		}
		if o.tableServerDefaults.Redis != nil {
			t.Errorf("%q: the parsed --table-server-defaults got the Redis", args)
		}
	}
	if d := parsed(t, []string{"--sts-image=x:1"}, func(string) string { return "" }, "").defaults(); d != nil {
		t.Errorf("no flag: defaults %+v, want none", d)
	}
	if d := parsed(t, []string{"--sts-image=x:1", redis}, func(string) string { return "" }, "").defaults(); d == nil || d.Redis == nil || d.NodeSelector != nil {
		t.Errorf("--default-redis alone: defaults %+v", d)
	}
}
