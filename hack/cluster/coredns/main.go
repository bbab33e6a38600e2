// Command coredns is CoreDNS with only the plugins the local cluster's Corefile uses, built
// from the Go module proxy by hack/cluster/build.sh. Its own module: CoreDNS pins its own
// client-go. Importing single plugins instead of core/plugin keeps the build small.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
