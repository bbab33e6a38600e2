package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	stsv1alpha1 "github.com/sts-operator/sts-operator/api/v1alpha1"
	"github.com/sts-operator/sts-operator/internal/specs"
)

// apply creates the objects tableServer owns, or updates them when their desired spec changed, and
// returns the Deployment. While the Deployment is blocked (a source is missing, or the spec is
// one the server would refuse) it is neither created (its pod could not start) nor updated
// (Recreate would stop the running server first): it is nil until it exists. An object that
// exists unchanged costs no write.
func (r *SimpleTableServerReconciler) apply(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, src *sources, blocked bool) (*appsv1.Deployment, error) {
	running, err := r.runningDeployment(ctx, tableServer)
	if err != nil {
		return nil, err
	}
	// Every object is labelled with the version of the image the server runs.
	image := specs.ServerImage(tableServer, r.DefaultImage, running)
	if claim := specs.PersistentVolumeClaim(tableServer, image); claim != nil {
		if err := r.createOnce(ctx, tableServer, claim, &corev1.PersistentVolumeClaim{}); err != nil {
			return nil, err
		}
	}
	if err := r.applyService(ctx, tableServer, specs.Service(tableServer, image)); err != nil {
		return nil, err
	}
	pdb := specs.PodDisruptionBudget(tableServer, image)
	if err := r.applyOptional(ctx, tableServer, pdb != nil, pdb, &policyv1.PodDisruptionBudget{}); err != nil {
		return nil, err
	}
	policy := specs.NetworkPolicy(tableServer, image, r.Namespace)
	if err := r.applyOptional(ctx, tableServer, policy != nil, policy, &networkingv1.NetworkPolicy{}); err != nil {
		return nil, err
	}
	return r.applyDeployment(ctx, tableServer, running, image, src, blocked)
}

// runningDeployment is tableServer's Deployment, nil when there is none yet.
func (r *SimpleTableServerReconciler) runningDeployment(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	err := r.Get(ctx, client.ObjectKey{Namespace: tableServer.Namespace, Name: tableServer.Name}, &d)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("while getting Deployment %q: %w", tableServer.Name, err)
	}
	if err := checkOwner(tableServer, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// applyOptional creates or updates desired, an object of the resource's name that it has only
// in some cases (a budget for several replicas, a network policy), or, when it is not wanted,
// deletes the one that exists. existing is an empty object of its type.
func (r *SimpleTableServerReconciler) applyOptional(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, want bool, desired, existing client.Object) error {
	err := r.Get(ctx, client.ObjectKey{Namespace: tableServer.Namespace, Name: tableServer.Name}, existing)
	switch {
	case apierrors.IsNotFound(err) && !want:
		return nil
	case apierrors.IsNotFound(err):
		return r.create(ctx, tableServer, desired)
	case err != nil:
		return fmt.Errorf("while getting %s %q: %w", kindOf(existing), tableServer.Name, err)
	}
	if err := checkOwner(tableServer, existing); err != nil {
		return err
	}
	if !want {
		if err := r.Delete(ctx, existing); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("while deleting %s %q: %w", kindOf(existing), tableServer.Name, err)
		}
		r.Recorder.Eventf(tableServer, existing, corev1.EventTypeNormal, "Deleted", "Delete", "Deleted %s %s: the resource no longer asks for it", kindOf(existing), tableServer.Name)
		return nil
	}
	if !specChanged(existing, desired) {
		if relabelled(existing, desired) {
			return r.update(ctx, tableServer, existing, desired, "")
		}
		return nil
	}
	switch e := existing.(type) {
	case *policyv1.PodDisruptionBudget:
		e.Spec = desired.(*policyv1.PodDisruptionBudget).Spec
	case *networkingv1.NetworkPolicy:
		e.Spec = desired.(*networkingv1.NetworkPolicy).Spec
	}
	return r.update(ctx, tableServer, existing, desired, "")
}

// createOnce creates obj unless it exists; it never updates its spec (the claim's is
// immutable), only its labels.
func (r *SimpleTableServerReconciler) createOnce(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, obj, existing client.Object) error {
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	if apierrors.IsNotFound(err) {
		return r.create(ctx, tableServer, obj)
	}
	if err != nil {
		return fmt.Errorf("while getting %s %q: %w", kindOf(obj), obj.GetName(), err)
	}
	if err := checkOwner(tableServer, existing); err != nil {
		return err
	}
	if relabelled(existing, obj) {
		return r.update(ctx, tableServer, existing, obj, "")
	}
	return nil
}

func (r *SimpleTableServerReconciler) applyService(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, desired *corev1.Service) error {
	var svc corev1.Service
	err := r.Get(ctx, client.ObjectKeyFromObject(desired), &svc)
	switch {
	case apierrors.IsNotFound(err):
		return r.create(ctx, tableServer, desired)
	case err != nil:
		return fmt.Errorf("while getting Service %q: %w", desired.Name, err)
	}
	if err := checkOwner(tableServer, &svc); err != nil {
		return err
	}
	if !specChanged(&svc, desired) && !serviceEdited(&svc, desired) {
		if relabelled(&svc, desired) {
			return r.update(ctx, tableServer, &svc, desired, "")
		}
		return nil
	}
	// The cluster IP and node ports that the API server assigned stay as they are.
	svc.Spec.Type = desired.Spec.Type
	svc.Spec.Selector = desired.Spec.Selector
	svc.Spec.Ports = desired.Spec.Ports
	svc.Spec.ExternalName = ""
	return r.update(ctx, tableServer, &svc, desired, "")
}

// serviceEdited says whether someone changed the fields of svc that the operator owns behind
// the resource's back, which the spec hash does not see: its type, selector or ports. An
// ExternalName Service pointing elsewhere would carry the injectors' requests, and their
// bearer token, away. The API server's own fields (cluster IP, node ports) are not compared.
func serviceEdited(svc, desired *corev1.Service) bool {
	if svc.Spec.Type != desired.Spec.Type || svc.Spec.ExternalName != "" ||
		!equality.Semantic.DeepEqual(svc.Spec.Selector, desired.Spec.Selector) || len(svc.Spec.Ports) != len(desired.Spec.Ports) {
		return true
	}
	for i, p := range svc.Spec.Ports {
		want := desired.Spec.Ports[i]
		if p.Name != want.Name || p.Port != want.Port || p.TargetPort != want.TargetPort || p.Protocol != want.Protocol {
			return true
		}
	}
	return false
}

// applyDeployment creates the Deployment running image, or updates running (nil: none yet).
func (r *SimpleTableServerReconciler) applyDeployment(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, running *appsv1.Deployment, image string, src *sources, blocked bool) (*appsv1.Deployment, error) {
	desired := specs.Deployment(tableServer, image, r.Defaults)
	switch {
	case running == nil && blocked:
		return nil, nil
	case running == nil:
		desired.Annotations[loadedDatasetsAnnotation] = encodeHashes(src.hashes)
		return desired, r.create(ctx, tableServer, desired)
	}
	d := running
	newPods := specChanged(d, desired) || serverEdited(d, desired)
	if blocked || !newPods && !scaledByHand(d, desired) && !relabelled(d, desired) {
		return d, nil
	}
	record := "" // putting back a replica count or strategy restarts no pod: the record stands
	if newPods {
		record = encodeHashes(loadedAfterRestart(specs.ListsOutlivePods(tableServer), loadedHashes(d), src.hashes))
		d.Spec = desired.Spec
	} else {
		// Only the replica count, the strategy or the labels: the pod template stays, no pod restarts.
		d.Spec.Replicas, d.Spec.Strategy = desired.Spec.Replicas, desired.Spec.Strategy
	}
	return d, r.update(ctx, tableServer, d, desired, record)
}

// serverEdited says whether someone changed what the table-server container runs behind the
// resource's back (kubectl edit or set image on the Deployment: another image, a flag removed
// such as --auth-token-file), which the spec hash does not see. Only the image, command and
// arguments are compared: fields that admission webhooks commonly add to pods (environment,
// sidecars, volumes) are left to them.
func serverEdited(d, desired *appsv1.Deployment) bool {
	have, want := specs.ServerContainer(d), specs.ServerContainer(desired)
	return have == nil || have.Image != want.Image || !slices.Equal(have.Command, want.Command) || !slices.Equal(have.Args, want.Args)
}

// scaledByHand says whether someone changed d's replica count or strategy behind the resource's
// back (kubectl scale on the Deployment, an edited strategy), which the spec hash does not see:
// two memory servers behind one Service would hand out the same lines. The resource's
// spec.replicas (its scale subresource) is the way to scale.
func scaledByHand(d, desired *appsv1.Deployment) bool {
	return ptr.Deref(d.Spec.Replicas, 1) != ptr.Deref(desired.Spec.Replicas, 1) ||
		!equality.Semantic.DeepEqual(d.Spec.Strategy, desired.Spec.Strategy)
}

// create creates obj and records an event.
func (r *SimpleTableServerReconciler) create(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, obj client.Object) error {
	err := r.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		// The cache holds only the objects the operator labels as its own.
		return &notOwnedError{fmt.Sprintf("%s %q exists and is not managed by this SimpleTableServer: delete or rename it", kindOf(obj), obj.GetName())}
	}
	if err != nil {
		return fmt.Errorf("while creating %s %q: %w", kindOf(obj), obj.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Created "+kindOf(obj), "name", obj.GetName())
	r.Recorder.Eventf(tableServer, obj, corev1.EventTypeNormal, "Created", "Create", "Created %s %s", kindOf(obj), obj.GetName())
	return nil
}

// update writes existing, whose spec the caller has set from desired, with desired's labels and
// annotations merged into its own (see updatedAnnotations); loaded, when not empty, replaces
// the loaded-datasets record.
func (r *SimpleTableServerReconciler) update(ctx context.Context, tableServer *stsv1alpha1.SimpleTableServer, existing, desired client.Object, loaded string) error {
	existing.SetLabels(specs.Merged(existing.GetLabels(), desired.GetLabels()))
	annotations := updatedAnnotations(existing.GetAnnotations(), desired.GetAnnotations())
	if loaded != "" { // a new pod: the record of what it loads replaces that of any reload
		annotations[loadedDatasetsAnnotation] = loaded
		delete(annotations, reloadedAtGenerationAnnotation)
	}
	existing.SetAnnotations(annotations)
	if err := r.Update(ctx, existing); err != nil {
		return fmt.Errorf("while updating %s %q: %w", kindOf(desired), existing.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Updated "+kindOf(desired), "name", existing.GetName())
	r.Recorder.Eventf(tableServer, existing, corev1.EventTypeNormal, "Updated", "Update", "Updated %s %s to the resource's spec", kindOf(desired), existing.GetName())
	return nil
}

// updatedAnnotations are existing's annotations with desired's set over them, less the keys
// that the operator set before (existing's specs.ManagedAnnotationsAnnotation) and desired no longer
// has. Annotations that others set (a cloud controller, kubectl) stay.
func updatedAnnotations(existing, desired map[string]string) map[string]string {
	out := specs.Merged(existing, desired)
	if before := existing[specs.ManagedAnnotationsAnnotation]; before != "" {
		for _, key := range strings.Split(before, ",") {
			if _, keep := desired[key]; !keep {
				delete(out, key)
			}
		}
	}
	if _, keep := desired[specs.ManagedAnnotationsAnnotation]; !keep {
		delete(out, specs.ManagedAnnotationsAnnotation)
	}
	return out
}

// notOwnedError is an object of the name the operator needs that belongs to someone else.
type notOwnedError struct{ message string }

func (e *notOwnedError) Error() string { return e.message }

// needsUser says whether an apply error is one that retrying cannot fix: a name taken by
// another owner, an object the API server finds invalid, or a write it forbids (RBAC, quota,
// admission policy).
func needsUser(err error) bool {
	var notOwned *notOwnedError
	return errors.As(err, &notOwned) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err)
}

// checkOwner refuses to take over an object of the same name that tableServer does not control.
func checkOwner(tableServer *stsv1alpha1.SimpleTableServer, obj client.Object) error {
	if !metav1.IsControlledBy(obj, tableServer) {
		return &notOwnedError{fmt.Sprintf("%s %q exists and is not owned by this SimpleTableServer: delete or rename it", kindOf(obj), obj.GetName())}
	}
	return nil
}

// relabelled says whether existing lacks one of desired's labels or has another value for it:
// objects made by an operator release that set fewer labels get the full set, and a new image
// a new version label, without a new spec.
func relabelled(existing, desired client.Object) bool {
	have := existing.GetLabels()
	for k, v := range desired.GetLabels() {
		if have[k] != v {
			return true
		}
	}
	return false
}

func specChanged(existing, desired client.Object) bool {
	return existing.GetAnnotations()[specs.SpecHashAnnotation] != desired.GetAnnotations()[specs.SpecHashAnnotation]
}

// kindOf names the kinds the builders make; typed objects carry no TypeMeta.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *corev1.Service:
		return "Service"
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	case *networkingv1.NetworkPolicy:
		return "NetworkPolicy"
	}
	return fmt.Sprintf("%T", obj)
}
