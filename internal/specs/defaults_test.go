package specs

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs/specstest"
)

// defaults is what a cluster admin sets in tableServerDefaults.
var defaults = &Defaults{
	ImagePullPolicy:   corev1.PullAlways,
	ImagePullSecrets:  []corev1.LocalObjectReference{{Name: "registry"}},
	Resources:         &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
	NodeSelector:      map[string]string{"pool": "load"},
	Tolerations:       []corev1.Toleration{{Key: "load", Operator: corev1.TolerationOpExists}},
	Affinity:          &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}},
	PriorityClassName: "load-high",
	TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
		MaxSkew: 2, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
	}},
	PodLabels:      map[string]string{"team": "platform", "cost-centre": "qa"},
	PodAnnotations: map[string]string{"sidecar.istio.io/inject": "false"},
	Service:        stsv1alpha1.ServiceOptions{Type: corev1.ServiceTypeLoadBalancer, Annotations: map[string]string{"lb": "internal"}},
	PodSecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
	SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true)},
}

func TestDefaultsReachThePodsThatDoNotSetTheirOwn(t *testing.T) {
	own := func(s *stsv1alpha1.SimpleTableServer) {
		s.Spec.ImagePullPolicy = corev1.PullNever
		s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
		s.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
		s.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		s.Spec.Tolerations = []corev1.Toleration{{Key: "mine", Operator: corev1.TolerationOpExists}}
		s.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}}
		s.Spec.PriorityClassName = "mine"
		s.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway}}
		s.Spec.PodLabels = map[string]string{"team": "checkout"}
		s.Spec.PodAnnotations = map[string]string{"sidecar.istio.io/inject": "true"}
		s.Spec.Service = stsv1alpha1.ServiceOptions{Type: corev1.ServiceTypeNodePort, Annotations: map[string]string{"lb": "external"}}
	}
	tests := map[string]struct {
		tableServer *stsv1alpha1.SimpleTableServer
		// want: the pod fields expected; the pod's labels and annotations, the Service's.
		want                                                   stsv1alpha1.SimpleTableServerSpec
		wantLabels, wantPodAnnotations, wantServiceAnnotations map[string]string
		wantServiceType                                        corev1.ServiceType
	}{
		"a resource that sets nothing gets every default": {
			tableServer: specstest.New("a", func(s *stsv1alpha1.SimpleTableServer) { s.Spec.Service.Type = corev1.ServiceTypeClusterIP }),
			want: stsv1alpha1.SimpleTableServerSpec{
				ImagePullPolicy: defaults.ImagePullPolicy, ImagePullSecrets: defaults.ImagePullSecrets, Resources: *defaults.Resources,
				NodeSelector: defaults.NodeSelector, Tolerations: defaults.Tolerations, Affinity: defaults.Affinity,
				PriorityClassName: defaults.PriorityClassName, TopologySpreadConstraints: defaults.TopologySpreadConstraints,
			},
			wantLabels:             map[string]string{"team": "platform", "cost-centre": "qa"},
			wantPodAnnotations:     map[string]string{"sidecar.istio.io/inject": "false"},
			wantServiceAnnotations: map[string]string{"lb": "internal"},
			wantServiceType:        corev1.ServiceTypeLoadBalancer,
		},
		"a resource's own values win, field by field and key by key": {
			tableServer:            specstest.New("a", own),
			want:                   specstest.New("a", own).Spec,
			wantLabels:             map[string]string{"team": "checkout", "cost-centre": "qa"},
			wantPodAnnotations:     map[string]string{"sidecar.istio.io/inject": "true"},
			wantServiceAnnotations: map[string]string{"lb": "external"},
			wantServiceType:        corev1.ServiceTypeNodePort,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.tableServer.DeepCopy()
			run := defaults.Apply(tc.tableServer)
			if !reflect.DeepEqual(tc.tableServer, before) {
				t.Error("Apply changed the resource it was given")
			}
			pod := Deployment(run, specstest.Image, defaults).Spec.Template
			want := tc.want
			c := pod.Spec.Containers[0]
			for field, got := range map[string][2]any{
				"imagePullPolicy":           {c.ImagePullPolicy, want.ImagePullPolicy},
				"imagePullSecrets":          {pod.Spec.ImagePullSecrets, want.ImagePullSecrets},
				"resources":                 {c.Resources, want.Resources},
				"nodeSelector":              {pod.Spec.NodeSelector, want.NodeSelector},
				"tolerations":               {pod.Spec.Tolerations, want.Tolerations},
				"affinity":                  {pod.Spec.Affinity, want.Affinity},
				"priorityClassName":         {pod.Spec.PriorityClassName, want.PriorityClassName},
				"topologySpreadConstraints": {pod.Spec.TopologySpreadConstraints, want.TopologySpreadConstraints},
			} {
				if !reflect.DeepEqual(got[0], got[1]) {
					t.Errorf("%s = %+v, want %+v", field, got[0], got[1])
				}
			}
			for k, v := range tc.wantLabels {
				if pod.Labels[k] != v {
					t.Errorf("pod label %s = %q, want %q", k, pod.Labels[k], v)
				}
			}
			for k, v := range tc.wantPodAnnotations {
				if pod.Annotations[k] != v {
					t.Errorf("pod annotation %s = %q, want %q", k, pod.Annotations[k], v)
				}
			}
			svc := Service(run, specstest.Image)
			if svc.Spec.Type != tc.wantServiceType {
				t.Errorf("Service type %s, want %s", svc.Spec.Type, tc.wantServiceType)
			}
			for k, v := range tc.wantServiceAnnotations {
				if svc.Annotations[k] != v {
					t.Errorf("Service annotation %s = %q, want %q", k, svc.Annotations[k], v)
				}
			}
		})
	}
}

func TestDefaultSecurityContextsReplaceTheHardenedOnes(t *testing.T) {
	tableServer := specstest.New("a")
	hardened := Deployment(tableServer, specstest.Image, nil).Spec.Template.Spec
	if sc := hardened.SecurityContext; sc == nil || ptr.Deref(sc.RunAsUser, 0) != nonRootID || !ptr.Deref(sc.RunAsNonRoot, false) {
		t.Fatalf("pod security context without defaults %+v, want the hardened one", sc)
	}
	if !reflect.DeepEqual(Deployment(tableServer, specstest.Image, &Defaults{PriorityClassName: "x"}).Spec.Template.Spec.SecurityContext, hardened.SecurityContext) {
		t.Error("defaults without security contexts changed the hardened ones")
	}
	pod := Deployment(defaults.Apply(tableServer), specstest.Image, defaults).Spec.Template.Spec
	// OpenShift's restricted SCC assigns the user ID: the default leaves runAsUser out.
	if !reflect.DeepEqual(pod.SecurityContext, defaults.PodSecurityContext) || pod.SecurityContext.RunAsUser != nil {
		t.Errorf("pod security context %+v, want the default's %+v", pod.SecurityContext, defaults.PodSecurityContext)
	}
	if !reflect.DeepEqual(pod.Containers[0].SecurityContext, defaults.SecurityContext) {
		t.Errorf("container security context %+v, want the default's", pod.Containers[0].SecurityContext)
	}
}

func TestNoDefaultsChangeNothing(t *testing.T) {
	tableServer := specstest.New("a", specstest.WithConfigMapDataset("users", "logins", "users"))
	var none *Defaults
	if got := none.Apply(tableServer); got != tableServer {
		t.Error("nil defaults copied or changed the resource")
	}
	if a, b := Deployment((&Defaults{}).Apply(tableServer), specstest.Image, &Defaults{}), Deployment(tableServer, specstest.Image, nil); !reflect.DeepEqual(a, b) {
		t.Errorf("empty defaults changed the Deployment:\n%+v\n%+v", a.Spec.Template.Spec, b.Spec.Template.Spec)
	}
}

// The client decodes the API server's answer into a written object, and reconciles run at once:
// a built object must share nothing with the defaults.
func TestBuiltObjectsShareNothingWithTheDefaults(t *testing.T) {
	mine := &Defaults{}
	*mine = *defaults
	before, err := json.Marshal(mine)
	if err != nil {
		t.Fatal(err)
	}
	d := Deployment(mine.Apply(specstest.New("a")), specstest.Image, mine)
	pod := &d.Spec.Template.Spec
	pod.NodeSelector["pool"] = "other"
	pod.Tolerations[0].Key = "other"
	pod.TopologySpreadConstraints[0].MaxSkew = 9
	pod.Affinity.NodeAffinity = nil
	pod.ImagePullSecrets[0].Name = "other"
	pod.SecurityContext.RunAsNonRoot = ptr.To(false)
	pod.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
	pod.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Ki")
	if after, _ := json.Marshal(mine); string(after) != string(before) {
		t.Errorf("writing into a built Deployment changed the defaults:\n%s\nwas\n%s", after, before)
	}
}
