package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

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
			o, err := parseOptions(tc.args, env(tc.env), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
