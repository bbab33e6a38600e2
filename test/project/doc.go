// Package project holds the test that PROJECT, kubebuilder's description of the repository,
// says what the repository is: its module, and for each resource an API package that declares
// the kind, a CRD of its group and version, and a reconciler where it says there is one.
package project
