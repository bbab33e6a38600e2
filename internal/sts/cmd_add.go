package sts

import (
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// add answers ADD: LINE put at the list's front or end (ADD_MODE), the list created if needed;
// with UNIQUE=TRUE a line the list holds already is refused.
func (s *Server) add(req *request) reply {
	line, present := req.params["LINE"]
	if !present {
		return koMissing(protocol.CmdAdd, "LINE")
	}
	pos, ok := enumParam(req.params, "ADD_MODE", store.First, addModes)
	if !ok {
		// The original creates the list before it validates the mode.
		return s.ensureThen(req, koInvalid(protocol.CmdAdd, "ADD_MODE value has to be FIRST or LAST !"))
	}
	unique, ok := enumParam(req.params, "UNIQUE", false, trueOrFalse)
	if !ok {
		return s.ensureThen(req, koInvalid(protocol.CmdAdd, "UNIQUE value has to be TRUE or FALSE !"))
	}
	if err := s.store.Add(req.ctx, req.list, line, pos, unique); err != nil {
		return storeFailure(protocol.CmdAdd, req.list, err)
	}
	return okReply(protocol.CmdAdd)
}

// ensureThen creates the list of a failed ADD, as the original does, and answers rep unless the
// creation itself failed.
func (s *Server) ensureThen(req *request, rep reply) reply {
	if err := s.store.Ensure(req.ctx, req.list); err != nil {
		return storeFailure(protocol.CmdAdd, req.list, err)
	}
	return rep
}
