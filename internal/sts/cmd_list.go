package sts

import "github.com/sts-operator/sts-operator/internal/sts/protocol"

// The commands on a list as a whole: LENGTH and RESET.

// length answers LENGTH: the number of lines of the list.
func (s *Server) length(req *request) reply {
	n, err := s.store.Length(req.ctx, req.list)
	if err != nil {
		return storeFailure(protocol.CmdLength, req.list, err)
	}
	return okLength(protocol.CmdLength, n)
}

// reset answers RESET: the list emptied, its name still known.
func (s *Server) reset(req *request) reply {
	if _, err := s.store.Reset(req.ctx, req.list); err != nil {
		return storeFailure(protocol.CmdReset, req.list, err)
	}
	return okReply(protocol.CmdReset)
}
