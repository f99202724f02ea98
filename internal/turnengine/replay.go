package turnengine

import (
	"errors"
	"io"
	"time"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// Replay feeds a whole log to the engine at arrival time now — a file, a
// seed-dialect log or a wrapped stream — and then closes the turns still
// open as dangling, cause end_of_input. Rows name their session (a
// wrapper's sessionId, the header's id); rows that do not are filed under
// fallbackSession.
func Replay(e *Engine, r io.Reader, opts sessionlog.Options, fallbackSession string, now time.Time) error {
	dec, err := sessionlog.NewDecoder(r, opts)
	if err != nil {
		return err
	}
	defer dec.Close()
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		id := row.SessionID
		if row.Wrapper == sessionlog.WrapNone {
			if h := dec.Header(); h != nil && h.ID != "" {
				id = h.ID
			} else {
				id = fallbackSession
			}
		}
		for i := range row.Events {
			e.Ingest(Input{SessionID: id, Event: &row.Events[i], Format: dec.Format(), Header: dec.Header()}, now)
		}
	}
	e.Flush(CauseEndOfInput, now)
	return nil
}
