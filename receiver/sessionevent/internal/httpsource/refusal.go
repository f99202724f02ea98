package httpsource

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// reqError is a refused request: the status and what the client is told.
type reqError struct {
	status int
	msg    string
	// line is the 1-based line of the offending row (0: none), seq its seq
	// (-1: unknown), code the violation code when one applies.
	line int
	seq  int64
	code string
	// reason is the rows_rejected reason attribute.
	reason string
}

func (e *reqError) Error() string { return e.msg }

// rowError refuses a request because of one row's violation.
func rowError(v sessionlog.Violation) *reqError {
	return &reqError{
		status: http.StatusBadRequest, msg: fmt.Sprintf("line %d: %s", v.Line, v.String()),
		line: v.Line, seq: v.Seq, code: v.Code, reason: strings.ToLower(v.Code),
	}
}

// versionError refuses a request because a line could not be decoded: a
// format version this reader does not know, or no JSON row at all.
func versionError(err error, line int) *reqError {
	var uv *sessionlog.UnsupportedVersionError
	if errors.As(err, &uv) {
		return &reqError{status: http.StatusBadRequest, msg: uv.Error(), line: uv.Line, seq: -1,
			code: "UNSUPPORTED_VERSION", reason: "unsupported_version"}
	}
	return &reqError{status: http.StatusBadRequest, msg: fmt.Sprintf("line %d: %v", line, err), line: line, seq: -1, reason: "invalid"}
}

// refusal is what the client is told of a refused delivery: 400 when the
// pipeline refused permanently, else 503 (retry the same request).
// notStored is what the client is told of a request whose rows were
// delivered but whose deduplication state could not be stored: 503, retry
// the same request (it delivers nothing again, and is acknowledged once
// the state is stored).
func notStored(err error) *reqError {
	return &reqError{status: http.StatusServiceUnavailable, seq: -1, reason: "state_not_stored",
		msg: "the rows cannot be made durable now (the deduplication state could not be stored), retry later: " + err.Error()}
}

func refusal(err error) *reqError {
	if consumererror.IsPermanent(err) {
		return &reqError{status: http.StatusBadRequest, seq: -1, reason: "downstream_permanent",
			msg: "the pipeline refused the rows permanently: " + err.Error()}
	}
	return &reqError{status: http.StatusServiceUnavailable, seq: -1, reason: "downstream_retryable",
		msg: "the pipeline cannot take the rows now, retry later: " + err.Error()}
}
