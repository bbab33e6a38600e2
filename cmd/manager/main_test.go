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
		})
	}
}
