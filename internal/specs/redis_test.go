package specs

import (
	"path"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

func TestDeploymentOnRedis(t *testing.T) {
	base := []string{"--bind=0.0.0.0", "--port=9191", "--dataset-dir=/data", "--add-timestamp=true", "--allow-stop=false"}
	tests := map[string]struct {
		redis    *stsv1alpha1.RedisBackend
		opts     []specstest.Option
		wantArgs []string
		// wantFiles are the files mounted from Secrets: path -> "secret/key".
		wantFiles map[string]string
	}{
		"an address": {
			redis:    specstest.RedisAt("redis.redis.svc:6379"),
			wantArgs: append(slices.Clone(base), "--redis-url=redis://redis.redis.svc:6379/0", "--redis-key-prefix=sts:perf/logins:"),
		},
		"every option": {
			redis: &stsv1alpha1.RedisBackend{
				RedisConnection: stsv1alpha1.RedisConnection{
					Address: "r.example.com:6380", Database: ptr.To[int32](3),
					CredentialsSecret: &stsv1alpha1.RedisCredentials{Name: "redis", PasswordKey: "pw", UsernameKey: "user"},
					TLS:               &stsv1alpha1.RedisTLS{Enabled: true, CASecret: &stsv1alpha1.KeySelector{Name: "redis-ca", Key: "ca.pem"}},
				},
				KeyPrefix: "load:", MinReplicas: 1, MinReplicasTimeout: &metav1.Duration{Duration: 500 * time.Millisecond},
			},
			wantArgs: append(slices.Clone(base), "--redis-url=rediss://r.example.com:6380/3", "--redis-key-prefix=load:",
				"--redis-password-file=/var/run/sts/redis/password", "--redis-username-file=/var/run/sts/redis/username",
				"--redis-ca-file=/var/run/sts/redis-ca/ca.crt", "--redis-min-replicas=1", "--redis-min-replicas-timeout=500ms"),
			wantFiles: map[string]string{
				"/var/run/sts/redis/password": "redis/pw", "/var/run/sts/redis/username": "redis/user", "/var/run/sts/redis-ca/ca.crt": "redis-ca/ca.pem",
			},
		},
		"Sentinel, the default password key": {
			redis: &stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{
				Sentinel:          &stsv1alpha1.RedisSentinel{MasterName: "main", Addresses: []string{"s0:26379", "s1:26379"}},
				CredentialsSecret: &stsv1alpha1.RedisCredentials{Name: "redis"},
			}},
			wantArgs: append(slices.Clone(base), "--redis-url=redis://s0:26379/0", "--redis-key-prefix=sts:perf/logins:",
				"--redis-sentinel-master=main", "--redis-sentinel-addrs=s0:26379,s1:26379", "--redis-password-file=/var/run/sts/redis/password"),
			wantFiles: map[string]string{"/var/run/sts/redis/password": "redis/password"},
		},
		"Cluster": {
			redis:    &stsv1alpha1.RedisBackend{RedisConnection: stsv1alpha1.RedisConnection{Address: "node-0:6379", Cluster: ptr.To(true)}},
			wantArgs: append(slices.Clone(base), "--redis-url=redis://node-0:6379/0", "--redis-key-prefix=sts:perf/logins:", "--redis-cluster"),
		},
		"storage: no journal, the lists are in Redis": {
			redis: specstest.RedisAt("r:6379"), opts: []specstest.Option{specstest.WithExistingClaim("saved")},
			wantArgs: append(slices.Clone(base), "--redis-url=redis://r:6379/0", "--redis-key-prefix=sts:perf/logins:"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tableServer := specstest.New("logins", append([]specstest.Option{specstest.InNamespace("perf"), specstest.WithRedis(tc.redis, 1)}, tc.opts...)...)
			d := Deployment(tableServer, specstest.Image, nil)
			if got := d.Spec.Template.Spec.Containers[0].Args; !reflect.DeepEqual(got, tc.wantArgs) {
				t.Errorf("args\n got %q\nwant %q", got, tc.wantArgs)
			}
			for file, want := range tc.wantFiles {
				v, m := volumeAt(t, d, file)
				var got string
				for _, item := range v.Secret.Items {
					if item.Path == path.Base(file) {
						got = v.Secret.SecretName + "/" + item.Key
					}
				}
				if got != want || !m.ReadOnly {
					t.Errorf("%s comes from %q (read-only %t), want %q", file, got, m.ReadOnly, want)
				}
			}
		})
	}
}

func TestReplicasOnRedisRollOneAtATimeSpreadAndBudgeted(t *testing.T) {
	tests := map[string]struct {
		opts         []specstest.Option
		wantReplicas int32
		wantRolling  bool
		wantSpread   []string // topology keys
		wantBudget   bool
	}{
		"memory: one pod, Recreate, no budget":         {wantReplicas: 1},
		"memory: replicas are ignored":                 {opts: []specstest.Option{func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Replicas = 3 }}, wantReplicas: 1},
		"redis, one replica: rolling, no spread":       {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 1)}, wantReplicas: 1, wantRolling: true},
		"redis, three replicas: spread, one at a time": {opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 3)}, wantReplicas: 3, wantRolling: true, wantSpread: []string{corev1.LabelHostname, corev1.LabelTopologyZone}, wantBudget: true},
		"redis, the user's own spread": {
			opts: []specstest.Option{specstest.WithRedis(specstest.RedisAt("r:6379"), 3), func(s *stsv1alpha1.SimpleTableServer) {
				s.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "rack", WhenUnsatisfiable: corev1.DoNotSchedule}}
			}},
			wantReplicas: 3, wantRolling: true, wantSpread: []string{"rack"}, wantBudget: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tableServer := specstest.New("logins", tc.opts...)
			d := Deployment(tableServer, specstest.Image, nil)
			if got := *d.Spec.Replicas; got != tc.wantReplicas {
				t.Errorf("replicas %d, want %d", got, tc.wantReplicas)
			}
			st := d.Spec.Strategy
			if tc.wantRolling {
				if st.Type != appsv1.RollingUpdateDeploymentStrategyType || *st.RollingUpdate.MaxUnavailable != intstr.FromInt32(0) || *st.RollingUpdate.MaxSurge != intstr.FromInt32(1) {
					t.Errorf("strategy %+v, want a rolling update that never leaves fewer ready pods (maxUnavailable 0, maxSurge 1)", st)
				}
			} else if st.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("strategy %+v, want Recreate: two memory servers would hand out the same lines", st)
			}
			var keys []string
			for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
				keys = append(keys, c.TopologyKey)
				if c.TopologyKey != "rack" && (c.WhenUnsatisfiable != corev1.ScheduleAnyway || !reflect.DeepEqual(c.LabelSelector.MatchLabels, SelectorLabels(tableServer))) {
					t.Errorf("spread %+v: want ScheduleAnyway over the resource's pods", c)
				}
			}
			if !reflect.DeepEqual(keys, tc.wantSpread) {
				t.Errorf("spread over %q, want %q", keys, tc.wantSpread)
			}
			if pre := d.Spec.Template.Spec.Containers[0].Lifecycle; tc.wantRolling != (pre != nil && pre.PreStop.Sleep != nil && pre.PreStop.Sleep.Seconds > 0) {
				t.Errorf("lifecycle %+v: a pod that shares the load must keep serving until the Service has let it go", pre)
			}
			if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g < preStopSleep+15 {
				t.Errorf("terminationGracePeriodSeconds %d leaves too little after the preStop sleep", g)
			}
			pdb := PodDisruptionBudget(tableServer, specstest.Image)
			if (pdb != nil) != tc.wantBudget {
				t.Fatalf("budget %+v, want one: %t", pdb, tc.wantBudget)
			}
			if pdb != nil {
				specstest.AssertOwnedBy(t, pdb.OwnerReferences, tableServer)
				if *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || !reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, SelectorLabels(tableServer)) {
					t.Errorf("budget %+v, want maxUnavailable 1 over the resource's pods", pdb.Spec)
				}
			}
		})
	}
}
