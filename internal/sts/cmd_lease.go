package sts

import (
	"fmt"
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// Leases (our extension, store/lease.go): READ, READMULTI and FIND with LEASE=<ms> take their
// lines out of the list as KEEP=FALSE does, but hold them under a lease that ACK ends for good,
// RELEASE ends by giving the lines back, and EXTEND prolongs; a lease that runs out gives its lines
// back by itself. ACK, RELEASE and EXTEND name a lease by LEASE=<id>, or by FILENAME and LINE
// for a plan that keeps only the line.

// maxDeliveriesLimit is the largest MAX_DELIVERIES: Java's largest int, as for NB_LINES.
const maxDeliveriesLimit = 1<<31 - 1

// leaseOptions parses LEASE and MAX_DELIVERIES, after the read's own parameters: leased says the
// read takes a lease, with spec.
func (s *Server) leaseOptions(command string, req *request) (spec store.LeaseSpec, leased bool, fail *reply) {
	refuse := func(rep reply) (store.LeaseSpec, bool, *reply) { return store.LeaseSpec{}, false, &rep }
	raw, leased := req.params["LEASE"]
	rawMax, maxGiven := req.params["MAX_DELIVERIES"]
	if !leased {
		if maxGiven {
			return refuse(koInvalid(command, "MAX_DELIVERIES goes with LEASE !"))
		}
		return store.LeaseSpec{}, false, nil
	}
	ttl, fail := s.leaseDuration(command, "LEASE", raw)
	if fail != nil {
		return store.LeaseSpec{}, false, fail
	}
	// KEEP=TRUE would hand the line to the next reader while this one holds it. Without KEEP, a
	// leased read consumes, as LEASE says it should.
	if req.params["KEEP"] == "TRUE" {
		return refuse(koInvalid(command, "LEASE needs KEEP=FALSE !"))
	}
	spec = store.LeaseSpec{TTL: ttl, MaxDeliveries: s.cfg.MaxDeliveries}
	if n, listed := s.cfg.MaxDeliveriesByList[req.list]; listed {
		spec.MaxDeliveries = n
	}
	if maxGiven {
		n, ok := parseDecimal(rawMax, maxDeliveriesLimit)
		if !ok {
			return refuse(koInvalid(command, fmt.Sprintf("MAX_DELIVERIES value has to be a number from 0 (never dead-letter) to %d !", maxDeliveriesLimit)))
		}
		spec.MaxDeliveries = int(n)
	}
	return spec, true, nil
}

// leaseDuration parses LEASE or LEASE_MS: milliseconds from 1 to Config.MaxLease. Unlike WAIT, a
// longer one is refused rather than shortened: a client that plans to hold a line that long
// must learn that the server would give it back sooner.
func (s *Server) leaseDuration(command, param, raw string) (time.Duration, *reply) {
	maxMillis := s.cfg.MaxLease.Milliseconds()
	ms, ok := parseDecimal(raw, maxMillis)
	if !ok || ms < 1 {
		rep := koInvalid(command, fmt.Sprintf("%s value has to be a number of milliseconds from 1 to %d !", param, maxMillis))
		return 0, &rep
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// readLeased is READ and READMULTI with LEASE.
func (s *Server) readLeased(req *request, command string, pos store.Position, n int, spec store.LeaseSpec, wait time.Duration) reply {
	lease, err := s.store.ReadLeased(req.ctx, req.list, pos, n, spec, wait)
	if err != nil {
		return storeFailure(command, req.list, err)
	}
	return okLeased(command, lease)
}

// leaseRef reads what ACK, RELEASE and EXTEND act on: the lease LEASE names, or the line LINE of
// a lease of FILENAME (dispatch has made sure FILENAME is there without LEASE).
func leaseRef(command string, req *request) (store.LeaseRef, *reply) {
	refuse := func(rep reply) (store.LeaseRef, *reply) { return store.LeaseRef{}, &rep }
	id, byID := req.params["LEASE"]
	line, byLine := req.params["LINE"]
	switch {
	case byID && byLine:
		return refuse(koInvalid(command, "LEASE and LINE exclude each other: name the lease or its line !"))
	case byID:
		if rep := checkIdentifier(command, "LEASE", id); rep != nil {
			return refuse(*rep)
		}
		return store.LeaseRef{List: req.list, ID: id}, nil
	case byLine:
		return store.LeaseRef{List: req.list, Line: line}, nil
	}
	return refuse(koMissing(command, "LEASE or LINE"))
}

func (s *Server) ack(req *request) reply {
	return endLease(protocol.CmdAck, req, func(ref store.LeaseRef) error { return s.store.Ack(req.ctx, ref) })
}

func (s *Server) release(req *request) reply {
	pos, ok := enumParam(req.params, "ADD_MODE", store.First, addModes)
	if !ok {
		return koInvalid(protocol.CmdRelease, "ADD_MODE value has to be FIRST or LAST !")
	}
	return endLease(protocol.CmdRelease, req, func(ref store.LeaseRef) error { return s.store.Release(req.ctx, ref, pos) })
}

// endLease is ACK or RELEASE: end applied to what the request names.
func endLease(command string, req *request, end func(store.LeaseRef) error) reply {
	ref, fail := leaseRef(command, req)
	if fail != nil {
		return *fail
	}
	if err := end(ref); err != nil {
		return leaseFailure(command, ref, err)
	}
	return okReply(command)
}

func (s *Server) extend(req *request) reply {
	ref, fail := leaseRef(protocol.CmdExtend, req)
	if fail != nil {
		return *fail
	}
	raw, present := req.params["LEASE_MS"]
	if !present {
		return koMissing(protocol.CmdExtend, "LEASE_MS")
	}
	ttl, fail := s.leaseDuration(protocol.CmdExtend, "LEASE_MS", raw)
	if fail != nil {
		return *fail
	}
	expires, err := s.store.Extend(req.ctx, ref, ttl)
	if err != nil {
		return leaseFailure(protocol.CmdExtend, ref, err)
	}
	return reply{command: protocol.CmdExtend, lease: ref.ID, expires: leaseExpiry(expires)}
}
