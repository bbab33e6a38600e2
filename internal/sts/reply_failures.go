package sts

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sts-operator/sts-operator/internal/sts/datafile"
	"github.com/sts-operator/sts-operator/internal/sts/javaregex"
	"github.com/sts-operator/sts-operator/internal/sts/protocol"
	"github.com/sts-operator/sts-operator/internal/sts/store"
)

// The failures of the commands: an error of the store, of a dataset file, of a file name or of a
// lease turned into the reply the original gives for it (or, for our extensions, one of their own).

// storeFailure turns a store error into the original's KO, or for our extensions into a KO of
// their own.
func storeFailure(command, name string, err error) reply {
	var short *store.ShortListError
	var limit *store.LimitError
	var ended *store.LeaseEndedError
	switch {
	case errors.Is(err, store.ErrNotLoaded):
		return koNotLoaded(command, name)
	case errors.Is(err, store.ErrEmpty):
		return koEmpty(command)
	case errors.As(err, &short):
		return ko(command, http.StatusNotFound, protocol.ReasonShortList,
			fmt.Sprintf("Number lines to read greater than file size, %d greater than %d !", short.Want, short.Have))
	case errors.Is(err, store.ErrNoMatch):
		return ko(command, http.StatusNotFound, protocol.ReasonNoMatch, "Not find !")
	case errors.Is(err, store.ErrDuplicate):
		return ko(command, http.StatusConflict, protocol.ReasonDuplicate, "ENTRY already exists !")
	case errors.Is(err, store.ErrLeaseNotFound):
		return ko(command, http.StatusNotFound, protocol.ReasonLeaseNotFound, "No such lease: unknown, acknowledged, or ended too long ago !")
	case errors.As(err, &ended):
		return ko(command, http.StatusConflict, protocol.ReasonLeaseEnded, "Lease "+ended.How+", its lines went back !")
	case errors.Is(err, javaregex.ErrTimeout):
		return ko(command, http.StatusBadRequest, protocol.ReasonRegexTimeout, "Regex evaluation timed out !")
	case errors.Is(err, javaregex.ErrTooComplex):
		return ko(command, http.StatusBadRequest, protocol.ReasonRegexTooComplex, "Regex needs too much backtracking !")
	case errors.As(err, &limit):
		return koLimit(command, limit.Limit, limit.Max)
	case errors.Is(err, store.ErrFull):
		return ko(command, http.StatusInsufficientStorage, protocol.ReasonLimit, "Storage backend full !")
	case errors.Is(err, store.ErrRequestReused):
		return ko(command, http.StatusUnprocessableEntity, protocol.ReasonRequestIDReused, "REQUEST_ID was sent before with another request !")
	case errors.Is(err, store.ErrOutcomeUnknown):
		// The backend's error is logged by the store. Only a retry with the same REQUEST_ID can
		// learn whether the change was made.
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonOutcomeUnknown, "Storage backend did not answer: the change may have been made; send commands with a REQUEST_ID to retry them safely !")
	case errors.Is(err, store.ErrUnavailable):
		// The backend's error (an address, a Redis message) is logged by the store, not shown.
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonBackendUnavailable, "Storage backend unavailable, retry later !")
	case errors.Is(err, store.ErrNotRecorded):
		// The journal's error names the state directory: it is logged by the journal, not shown.
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonNotRecorded, "The change could not be recorded, it may be lost !")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ko(command, http.StatusServiceUnavailable, protocol.ReasonUnavailable, "Request cancelled !")
	}
	return ko(command, http.StatusInternalServerError, protocol.ReasonIO, err.Error())
}

// nameFailure is the original's KO for a file name that INITFILE and SAVE refuse.
func nameFailure(command string, err error) reply {
	if errors.Is(err, datafile.ErrNameTooLong) {
		return ko(command, http.StatusBadRequest, protocol.ReasonNameTooLong, "Maximum size reached (128) !")
	}
	return ko(command, http.StatusBadRequest, protocol.ReasonIllegalName, "Illegal character found !")
}

// fileFailure is the KO of a dataset file that INITFILE or SAVE could not use. In the JSON form, a
// name that leads to something that cannot be a data file is the client's mistake (400); anything
// else is the server's file system failing (500).
func fileFailure(command string, err error) reply {
	var fileErr *datafile.FileError
	if errors.Is(err, datafile.ErrInvalidPath) || errors.As(err, &fileErr) && fileErr.BadName {
		return ko(command, http.StatusBadRequest, protocol.ReasonFileError, err.Error())
	}
	if datafile.NoSpace(err) {
		return ko(command, http.StatusInsufficientStorage, protocol.ReasonLimit, err.Error())
	}
	return ko(command, http.StatusInternalServerError, protocol.ReasonIO, err.Error())
}

// leaseFailure is storeFailure for ACK, RELEASE and EXTEND, which says which lease was not found.
func leaseFailure(command string, ref store.LeaseRef, err error) reply {
	if errors.Is(err, store.ErrLeaseNotFound) && ref.ID == "" {
		return ko(command, http.StatusNotFound, protocol.ReasonLeaseNotFound, "No lease of "+ref.List+" holds this line !")
	}
	return storeFailure(command, ref.List, err)
}
