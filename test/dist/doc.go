// Package dist holds the test of the install.yaml that `make dist` ships: applied for real, with
// kubectl, to a kube-apiserver that has nothing installed.
package dist
