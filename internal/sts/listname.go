package sts

import (
	"net/http"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
)

// limitNameBytes names Config.MaxNameBytes in its KO, as the store's limits are named: the flag.
const limitNameBytes = "max-name-bytes"

// checkListName refuses a FILENAME that no list may be called, before any command runs with it:
// one longer than Config.MaxNameBytes (413 in the JSON form, like a line too long), or one that
// holds a control character (400), which could forge rows in STATUS or lines in a log. INITFILE
// and SAVE apply the original's file-name rules first, with its messages.
func (s *Server) checkListName(command, name string) *reply {
	fileName := command == protocol.CmdInitFile || command == protocol.CmdSave
	if fileName {
		if err := datafile.ValidateName(name); err != nil {
			rep := nameFailure(command, err)
			return &rep
		}
	}
	if max := s.cfg.MaxNameBytes; max > 0 && int64(len(name)) > max {
		rep := koLimit(command, limitNameBytes, max)
		return &rep
	}
	if !hasControl(name) {
		return nil
	}
	rep := koInvalid(command, "FILENAME must not hold control characters !")
	if fileName {
		rep = ko(command, http.StatusBadRequest, protocol.ReasonIllegalName, datafile.ErrIllegalName.Error())
	}
	return &rep
}

// hasControl reports whether s holds a C0 control character (U+0000 to U+001F, CR, LF and tab
// included) or DEL. Bytes suffice: UTF-8 encodes no other character with a byte below 0x80.
func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
