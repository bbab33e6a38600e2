// Command etcd is etcd's own server, built from the Go module proxy for envtest and the local
// cluster (hack/envtest.sh). Its own module: Kubernetes pulls a newer etcd client.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
