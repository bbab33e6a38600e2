package sts

import (
	"net/http"
	"strconv"

	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// The commands about the server rather than a list: STATUS, CONFIG and STOP.

// status answers STATUS: every list with its length, and the startup loads that failed.
func (s *Server) status(req *request) reply {
	lists, err := s.store.Lists(req.ctx)
	if err != nil {
		return storeFailure(protocol.CmdStatus, "", err)
	}
	return reply{command: protocol.CmdStatus, layout: layoutStatus, lists: lists, failed: s.startupFailures()}
}

// config answers CONFIG with the effective settings under the original's keys. Ours never waits
// on standard input and is always started from the command line, hence demon and startFromCli.
func (s *Server) config(req *request) reply {
	lists, err := s.store.Lists(req.ctx)
	if err != nil {
		return storeFailure(protocol.CmdConfig, "", err)
	}
	c := s.cfg
	return reply{command: protocol.CmdConfig, layout: layoutConfig, config: []setting{
		{"jmeterPlugin.sts.loadAndRunOnStartup", strconv.FormatBool(c.LoadAndRunOnStartup)},
		{"startFromCli", "true"},
		{"jmeterPlugin.sts.port", strconv.Itoa(c.Port)},
		{"jmeterPlugin.sts.datasetDirectory", c.DatasetDir},
		{"jmeterPlugin.sts.addTimestamp", strconv.FormatBool(c.AddTimestamp)},
		{"jmeterPlugin.sts.demon", "true"},
		{"jmeterPlugin.sts.charsetEncodingHttpResponse", c.CharsetResponse},
		{"jmeterPlugin.sts.charsetEncodingReadFile", c.CharsetRead},
		{"jmeterPlugin.sts.charsetEncodingWriteFile", c.CharsetWrite},
		{"jmeterPlugin.sts.initFileAtStartup", c.InitFiles},
		{"jmeterPlugin.sts.initFileAtStartupRegex", strconv.FormatBool(c.InitFilesRegex)},
		{"databaseIsEmpty", strconv.FormatBool(len(lists) == 0)},
	}}
}

// stopCommand answers STOP; the handler then closes StopRequested. Under the operator a stopped
// pod would be restarted without its lists, so STOP can be disabled.
func (s *Server) stopCommand(*request) reply {
	if !s.cfg.AllowStop {
		return ko(protocol.CmdStop, http.StatusForbidden, protocol.ReasonStopDisabled, "STOP is disabled on this server !")
	}
	return okReply(protocol.CmdStop)
}
