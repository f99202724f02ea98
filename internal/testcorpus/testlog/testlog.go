// Package testlog decodes session logs for tests: the helper the
// component and CLI tests share to turn a corpus or testdata file into its
// rows, logical events or envelopes.
package testlog

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// Row is one decoded row with what was in force when it was read.
type Row struct {
	*sessionlog.Row
	// Session is the row's session: a wrapper's sessionId, else the file
	// header's id, else the fallback the caller gave.
	Session string
	Format  sessionlog.Format
	Header  *sessionlog.Header
}

// Rows decodes the log at path (plain or zstd, any dialect or wrapper)
// into its rows, failing the test on an I/O or framing error. Rows that
// name no session are filed under fallback.
func Rows(t testing.TB, path, fallback string) []Row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Read(t, f, fallback)
}

// Read is Rows for a reader.
func Read(t testing.TB, r io.Reader, fallback string) []Row {
	t.Helper()
	dec, err := sessionlog.NewDecoder(r, sessionlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var out []Row
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		id := row.SessionID
		if row.Wrapper == sessionlog.WrapNone {
			id = fallback
			if h := dec.Header(); h != nil && h.ID != "" {
				id = h.ID
			}
		}
		out = append(out, Row{Row: row, Session: id, Format: dec.Format(), Header: dec.Header()})
	}
}

// Envelopes are the logical events of the log at path as JSON envelopes
// (packed rows expanded), as dsh's own exporters see them, with the
// session id of the file's header.
func Envelopes(t testing.TB, path string) (session string, envs []map[string]any) {
	t.Helper()
	for _, r := range Rows(t, path, "") {
		if r.Header != nil && session == "" {
			session = r.Header.ID
		}
		for i := range r.Events {
			var env map[string]any
			if err := json.Unmarshal(r.Events[i].LogicalJSON(), &env); err != nil {
				t.Fatal(err)
			}
			envs = append(envs, env)
		}
	}
	return session, envs
}
