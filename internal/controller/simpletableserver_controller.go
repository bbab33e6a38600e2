package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
)

// DefaultRefreshInterval is how often the server's STATUS is read when the resource does not
// say (the API server defaults the field to the same value).
const DefaultRefreshInterval = 10 * time.Second

// SimpleTableServerReconciler reconciles SimpleTableServer resources.
type SimpleTableServerReconciler struct {
	client.Client
	// Recorder records the events a user should notice.
	Recorder events.EventRecorder
	// DefaultImage runs the table server of resources that name no image.
	DefaultImage string
	// Endpoints says where the operator reaches each table server.
	Endpoints EndpointResolver
	// HTTPClient calls the table servers; its Timeout bounds every call, so that a server that
	// does not answer holds a worker for at most that long.
	HTTPClient *http.Client
	// APIReader reads a ConfigMap or Secret that a dataset names from the API server when it
	// changed: the manager caches only their metadata (see sourceCache); and lists the pods of
	// table servers that do not answer through their Service.
	APIReader client.Reader
	// Defaults fill what a resource leaves unset: the Redis of a Redis backend that names none,
	// the table-server pods' settings (nil: none).
	Defaults *specs.Defaults
	// Namespace is where the operator runs: table servers' NetworkPolicies let it in ("": they
	// let in only the peers the resource names, and the operator must reach them otherwise).
	Namespace string

	sourceCache *sourceCache
	tokens      *acceptedTokens
	readings    *readings
}

// +kubebuilder:rbac:groups=sts.tableserver.dev,resources=simpletableservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=sts.tableserver.dev,resources=simpletableservers/status,verbs=get;patch
// finalizers: the owner references set blockOwnerDeletion, which the
// OwnerReferencesPermissionEnforcement admission plugin (OpenShift) allows only with this.
// +kubebuilder:rbac:groups=sts.tableserver.dev,resources=simpletableservers/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// pods: listed only when the table servers do not answer through their Service, to ask one
// directly why (see backendProblem).
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one SimpleTableServer's objects to its spec and its status to what the
// table server reports, then asks to run again after spec.statusRefreshInterval.
func (r *SimpleTableServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tableServer := &stsv1alpha1.SimpleTableServer{}
	if err := r.Get(ctx, req.NamespacedName, tableServer); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tableServer.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		// The garbage collector is removing what it owns (first, under foreground deletion):
		// recreating it would only race the deletion.
		return ctrl.Result{}, nil
	}
	run := r.Defaults.Apply(tableServer) // the resource as its pods run it
	src, err := r.resolveSources(ctx, run)
	if err != nil {
		// Nothing can be brought to a spec whose sources are unknown: say so, and retry.
		err = fmt.Errorf("while reading the dataset sources: %w", err)
		if serr := r.updateStatusUnreadable(ctx, tableServer, err); serr != nil && !apierrors.IsNotFound(serr) {
			return ctrl.Result{}, errors.Join(err, fmt.Errorf("while updating the status: %w", serr))
		}
		return ctrl.Result{}, err
	}
	obs := observation{sources: src, problems: specProblems(run)}
	obs.deployment, obs.applyErr = r.apply(ctx, run, src, obs.blocked())
	if apierrors.IsConflict(obs.applyErr) {
		return ctrl.Result{}, obs.applyErr // the cache lags behind a write: retry with the next view
	}
	obs.server = r.observeServer(ctx, run, obs.deployment, src)
	obs.reset = r.resetDatasets(ctx, run, obs.deployment, &obs.server)
	obs.consumption = r.measureConsumption(run, obs.server.status)
	switch err := r.updateStatus(ctx, tableServer, obs); {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil // deleted while this reconcile ran
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("while updating the status: %w", err)
	}
	if obs.applyErr != nil && !needsUser(obs.applyErr) {
		return ctrl.Result{}, obs.applyErr // a failure that may pass: retried with backoff
	}
	// What needs the user is in the Stalled condition; it is looked at again every interval.
	return ctrl.Result{RequeueAfter: refreshInterval(tableServer)}, nil
}

// forget drops what the operator remembers of a resource that is gone.
func (r *SimpleTableServerReconciler) forget(key types.NamespacedName) {
	r.tokens.forget(key)
	r.readings.forget(key)
}

func refreshInterval(tableServer *stsv1alpha1.SimpleTableServer) time.Duration {
	if d := tableServer.Spec.StatusRefreshInterval; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return DefaultRefreshInterval
}

// SetupWithManager registers the reconciler, its owned objects, and the field indexes through
// which ConfigMap and Secret changes (watched as metadata only) reach the resources that read
// them.
func (r *SimpleTableServerReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.sourceCache = newSourceCache(r.Client, r.APIReader)
	r.tokens = newAcceptedTokens()
	r.readings = newReadings()
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	obj := &stsv1alpha1.SimpleTableServer{}
	if err := indexer.IndexField(ctx, obj, configMapIndex, referencedConfigMaps); err != nil {
		return fmt.Errorf("while indexing ConfigMap references: %w", err)
	}
	if err := indexer.IndexField(ctx, obj, secretIndex, r.referencedSecrets); err != nil {
		return fmt.Errorf("while indexing Secret references: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		// Only spec and annotation changes: the reconciler's own status writes must not run it
		// again, or a server whose lists change would be polled at once instead of every interval.
		For(&stsv1alpha1.SimpleTableServer{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.readersOf(configMapIndex))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.readersOf(secretIndex))).
		WithOptions(opts).
		Complete(r)
}

// CacheByObject limits the manager's cache of Deployments, Services and claims to the ones the
// operator manages, instead of every such object in the cluster. Pass it as
// cache.Options.ByObject.
func CacheByObject() map[client.Object]cache.ByObject {
	managed := labels.SelectorFromSet(labels.Set{specs.ManagedByLabel: specs.ManagedByValue})
	return map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:            {Label: managed},
		&corev1.Service{}:               {Label: managed},
		&corev1.PersistentVolumeClaim{}: {Label: managed},
		&policyv1.PodDisruptionBudget{}: {Label: managed},
		&networkingv1.NetworkPolicy{}:   {Label: managed},
	}
}

// readersOf maps a ConfigMap or Secret to the resources in its namespace that reference it
// through index.
func (r *SimpleTableServerReconciler) readersOf(index string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list stsv1alpha1.SimpleTableServerList
		if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index: obj.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the SimpleTableServers that read an object", "object", client.ObjectKeyFromObject(obj))
			return nil
		}
		reqs := make([]reconcile.Request, len(list.Items))
		for i, item := range list.Items {
			reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: item.Namespace, Name: item.Name}}
		}
		return reqs
	}
}
