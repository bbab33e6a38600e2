// Package controller runs SimpleTableServer resources: each becomes a table server Deployment
// and Service (and, when the resource asks, a PersistentVolumeClaim, a PodDisruptionBudget and
// a NetworkPolicy), whose lists the reconciler reads back into the resource's status.
//
// Reconcile (simpletableserver_controller.go) is a list of steps, each in the file named after
// it. Every step after fetch works on the resource as its pods run it, Defaults.Apply of it
// (internal/specs: the default Redis and the admin's pod defaults); the status is written to
// the resource itself.
//
//   - fetch (simpletableserver_controller.go): a resource gone or being deleted needs nothing;
//     its objects go by their owner references.
//   - resolve sources (sources.go, sourcecache.go): the content of each ConfigMap and Secret key
//     the resource names; the manager caches their metadata only, and sourceCache fetches the
//     content again when the resourceVersion changed.
//   - check the spec (validate.go): what CEL cannot check, with the table server's own rules.
//   - build and apply (apply.go): internal/specs builds the objects; apply creates them, and
//     updates one only when its spec hash changed or someone edited, behind the resource's
//     back, a field the operator owns.
//   - observe the server (observe.go): STATUS through the Service with the resource's token
//     (client.go, the table server's HTTP client; tokens.go, the token a server last took while
//     a rotated Secret reaches its pod), the push of changed datasets under the Reload policy,
//     and, on Redis, a pod's report that it cannot reach its Redis.
//   - reset (reset.go): RELOAD once for each new value of the reset-at annotation.
//   - measure consumption (consumption.go): lines a second and time to empty, from two STATUS
//     readings kept in memory.
//   - update status (status.go): conditions from what was observed (assess), written only when
//     they differ, with an event for each new noticeable state.
//   - requeue after spec.statusRefreshInterval: polling costs no goroutine per resource.
//
// Locks: what the reconciler remembers between reconciles is three maps, each behind its own
// mutex (acceptedTokens.mu, readings.mu, sourceCache.mu), held only to read or write its map:
// never two at once, never across a call to the API server or to a table server, so there is
// no lock order to keep.
package controller
