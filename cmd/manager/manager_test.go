package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/testutil"
)

// The manager these tests start: as the chart runs it with watchNamespaces and
// tableServerDefaults, on an envtest API server, as a user with only the permissions config/rbac ships (its manager rules as Roles in
// the watched namespaces, the metrics-auth ClusterRole), serving its metrics securely.
var (
	watched   = []string{"team-a", "team-b"}
	unwatched = "elsewhere"
	operator  struct {
		once        sync.Once
		env         *envtest.Environment
		admin       *kubernetes.Clientset
		adminConfig *rest.Config
		metricsURL  string
		err         error
		stop        func()
	}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if operator.stop != nil {
		operator.stop()
	}
	os.Exit(code)
}

// startOperator starts the API server and the manager once for the package's tests.
func startOperator(t *testing.T) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		testutil.Skip(t, "KUBEBUILDER_ASSETS is not set; `make test` builds the control plane and sets it")
	}
	operator.once.Do(func() { operator.err = runOperator() })
	if operator.err != nil {
		t.Fatal(operator.err)
	}
}

func runOperator() error {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return err
	}
	operator.env, operator.adminConfig = env, cfg
	stops := []func(){func() { _ = env.Stop() }}
	operator.stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if operator.admin, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	ctx := context.Background()
	for _, ns := range append([]string{unwatched, "sts-system", "monitoring"}, watched...) {
		if _, err := operator.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	user, err := env.AddUser(envtest.User{Name: "sts-operator"}, nil)
	if err != nil {
		return err
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "sts-operator", APIGroup: rbacv1.GroupName}}
	manager, err := readRole[rbacv1.ClusterRole]("role.yaml")
	if err != nil {
		return err
	}
	for _, ns := range watched {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "sts-operator", Namespace: ns}, Rules: manager.Rules}
		if _, err := operator.admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return err
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sts-operator", Namespace: ns}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "sts-operator"}}
		if _, err := operator.admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := bindClusterRole(ctx, "metrics_auth_role.yaml", subject); err != nil {
		return err
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	operator.metricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	o, err := parseOptions([]string{
		"--sts-image=sts-operator:test", "--health-probe-bind-address=0", "--operator-namespace=sts-system",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--watch-namespaces=" + strings.Join(watched, ","),
		`--table-server-defaults={"nodeSelector":{"pool":"load"},"podLabels":{"team":"perf"}}`,
	}, func(string) string { return "" }, io.Discard)
	if err != nil {
		return err
	}
	mgr, err := newManager(user.Config(), o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stops = append(stops, func() { cancel(); <-done })
	return nil
}

// readRole decodes a role of config/rbac.
func readRole[T any](file string) (*T, error) {
	f, err := os.Open(filepath.Join("..", "..", "config", "rbac", file))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var role T
	return &role, utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&role)
}

// bindClusterRole creates the ClusterRole of config/rbac/file and binds subjects to it.
func bindClusterRole(ctx context.Context, file string, subjects []rbacv1.Subject) error {
	role, err := readRole[rbacv1.ClusterRole](file)
	if err != nil {
		return err
	}
	if _, err := operator.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + subjects[0].Name}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}}
	_, err = operator.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	return err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serviceAccountToken creates a service account in namespace monitoring and returns a token of it.
func serviceAccountToken(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "monitoring"}}
	if _, err := operator.admin.CoreV1().ServiceAccounts("monitoring").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := operator.admin.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape gets the metrics with token ("" for none) and returns the status and body.
func scrape(token string) (int, string, error) {
	// The manager serves a self-signed certificate: no --metrics-cert-dir.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest(http.MethodGet, operator.metricsURL, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestMetricsNeedATokenAllowedToReadThem(t *testing.T) {
	startOperator(t)
	prometheus := serviceAccountToken(t, "prometheus")
	stranger := serviceAccountToken(t, "stranger")
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: "monitoring"}}
	if err := bindClusterRole(context.Background(), "metrics_reader_role.yaml", subject); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a service account without metrics-reader", stranger, http.StatusForbidden},
		{"a service account bound to metrics-reader", prometheus, http.StatusOK},
	} {
		var status int
		var body string
		testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
			var err error
			status, body, err = scrape(tc.token)
			if err == nil && status == http.StatusOK && !strings.Contains(body, "controller_runtime_reconcile_total") {
				// The controller's series appear once it has started.
				return fmt.Errorf("the body holds no controller metrics: %.300q", body)
			}
			return err // the manager may not listen yet
		})
		if status != tc.want {
			t.Errorf("%s: status %d, want %d; body %.200q", tc.who, status, tc.want, body)
		}
	}
}

func TestWatchNamespacesRunOnlyTheirResources(t *testing.T) {
	startOperator(t)
	ctx := context.Background()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := client.New(operator.adminConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range append([]string{unwatched}, watched...) {
		tableServer := &stsv1alpha1.SimpleTableServer{ObjectMeta: metav1.ObjectMeta{Name: "logins", Namespace: ns}}
		if err := k8s.Create(ctx, tableServer); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range watched {
		testutil.Eventually(t, 60*time.Second, 250*time.Millisecond, func() error {
			d, err := operator.admin.AppsV1().Deployments(ns).Get(ctx, "logins", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Labels["app.kubernetes.io/managed-by"] != "sts-operator" {
				return fmt.Errorf("deployment labels %v", d.Labels)
			}
			// --table-server-defaults reach the pods of a resource that sets none.
			if pod := d.Spec.Template; pod.Spec.NodeSelector["pool"] != "load" || pod.Labels["team"] != "perf" {
				return fmt.Errorf("pod nodeSelector %v, labels %v: the defaults did not reach it", pod.Spec.NodeSelector, pod.Labels)
			}
			var tableServer stsv1alpha1.SimpleTableServer
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "logins"}, &tableServer); err != nil {
				return err
			}
			if tableServer.Status.ObservedGeneration == 0 {
				return errors.New("no status yet")
			}
			return nil
		})
	}
	// The watched resources are reconciled; the other one, created first, never is.
	_, err = operator.admin.AppsV1().Deployments(unwatched).Get(ctx, "logins", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the operator made a Deployment in %s, which it does not watch (err %v)", unwatched, err)
	}
	var tableServer stsv1alpha1.SimpleTableServer
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: unwatched, Name: "logins"}, &tableServer); err != nil {
		t.Fatal(err)
	}
	if tableServer.Status.ObservedGeneration != 0 || len(tableServer.Status.Conditions) > 0 {
		t.Errorf("the operator wrote the status of a resource in %s: %+v", unwatched, tableServer.Status)
	}
}
