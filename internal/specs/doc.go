// Package specs builds the objects a SimpleTableServer becomes: its Deployment, Service,
// PersistentVolumeClaim, PodDisruptionBudget and NetworkPolicy. Every builder is a pure function
// of the resource (as the operator runs it: Defaults.Apply, the one defaulting step, gives it the
// default Redis and the admin's pod settings) and what the controller resolved for it (the
// image its server runs, see ServerImage, whose tag is every object's version label; the
// operator's namespace): no client, no cluster, so that each shape is table-tested alone, and
// the objects built from each sample of config/samples are reviewed as YAML in testdata/ (make
// golden rewrites them, TestGolden fails when they drift). The controller decides when to
// create, update or delete them. The package has no state and no locks.
package specs
