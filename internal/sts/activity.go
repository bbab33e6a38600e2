package sts

import (
	"sync"
	"sync/atomic"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// activity counts, per list, the reads (READ, READMULTI, FIND) and adds (ADD, LOAD) this server
// answered OK: the web page shows them a second. They are not Prometheus series: a series per
// list and command is the cardinality --metrics-max-lists exists to bound, while here a list
// costs two counters, read only by the page.
type activity struct {
	lists sync.Map // list name → *listCounts
}

type listCounts struct{ reads, adds atomic.Int64 }

// count records a command answered for list.
func (a *activity) count(command, list string, ok bool) {
	if !ok || list == "" {
		return
	}
	var adds bool
	switch command {
	case protocol.CmdRead, protocol.CmdReadMulti, protocol.CmdFind:
	case protocol.CmdAdd, protocol.CmdLoad:
		adds = true
	default:
		return
	}
	c, found := a.lists.Load(list)
	if !found {
		c, _ = a.lists.LoadOrStore(list, new(listCounts))
	}
	if counts := c.(*listCounts); adds {
		counts.adds.Add(1)
	} else {
		counts.reads.Add(1)
	}
}

// of returns the reads and adds of list answered so far.
func (a *activity) of(list string) (reads, adds int64) {
	c, found := a.lists.Load(list)
	if !found {
		return 0, 0
	}
	counts := c.(*listCounts)
	return counts.reads.Load(), counts.adds.Load()
}
