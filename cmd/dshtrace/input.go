package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dshtrace/dshtrace/cmd/dshtrace/internal/replay"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// maxRowNotes bounds the rows an input says it could not read one by one;
// the rest are counted in one line at the end.
const maxRowNotes = 20

// openInput opens FILE, or standard input for "-". A directory or a file
// that is not there is one line naming it.
func openInput(name string, stdin io.Reader) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(stdin), nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, pathError(name, err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory, not a session log", name)
	}
	return f, nil
}

// pathError is err about path as one line that names the path once.
func pathError(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", path, pe.Err)
	}
	return fmt.Errorf("%s: %v", path, err)
}

// input reads one command's input row by row. It keeps the rows of one
// session when asked (--session), says on its notes writer every row it
// could not read (line, seq, why) and the torn tail, and ends with an
// error rather than io.EOF when the input has no readable row or not the
// session asked for.
type input struct {
	name string
	dec  *sessionlog.Decoder
	// session is the session kept; "" keeps every row.
	session string
	// notes is where what could not be read is said; nil says nothing
	// (check reports it itself).
	notes io.Writer

	rows     int // rows read, of any kind
	readable int // rows with an event or a header, of any session
	kept     int // readable rows of the session kept
	unread   int // rows that could not be read
	first    *sessionlog.Violation
	sessions []string // in the order of their first row
	seen     map[string]bool
}

// newInput reads r, named name, as a command's input.
func newInput(name string, r io.Reader, session string, notes io.Writer, reuse bool) (*input, error) {
	dec, err := sessionlog.NewDecoder(r, sessionlog.Options{ReuseRows: reuse})
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return &input{name: name, dec: dec, session: session, notes: notes, seen: map[string]bool{}}, nil
}

// Close releases the decoder.
func (in *input) Close() { in.dec.Close() }

// Format is what the decoder knows of the input's format.
func (in *input) Format() sessionlog.Format { return in.dec.Format() }

// Header is the input's header line, nil when it has none.
func (in *input) Header() *sessionlog.Header { return in.dec.Header() }

// Tail is the input's torn tail, nil when it has none.
func (in *input) Tail() *sessionlog.Tail { return in.dec.Tail() }

// Sessions are the sessions read so far, in the order of their first row.
func (in *input) Sessions() []string { return in.sessions }

// Next returns the next row of the session kept. Rows that could not be
// read are returned too (they carry no event), after being said. At the
// end it returns io.EOF, or an error saying why nothing was read.
func (in *input) Next() (*sessionlog.Row, error) {
	for {
		row, err := in.dec.Next()
		if errors.Is(err, io.EOF) {
			return nil, in.end()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", in.name, err)
		}
		in.rows++
		id, named := in.sessionOf(row)
		switch {
		case row.Kind == sessionlog.RowInvalid:
			in.unreadable(row)
		case named && (len(row.Events) > 0 || row.Kind == sessionlog.RowHeader):
			in.readable++
			if !in.seen[id] {
				in.seen[id] = true
				in.sessions = append(in.sessions, id)
			}
		}
		if named && in.session != "" && id != in.session {
			continue
		}
		if named && (len(row.Events) > 0 || row.Kind == sessionlog.RowHeader) {
			in.kept++
		}
		return row, nil
	}
}

// sessionOf names the session of a row: a wrapped row's own, else the
// file's header id, else the file's name (as spans and replay file it);
// named is false for a row that belongs to no session (a status line, a
// line that could not be read).
func (in *input) sessionOf(r *sessionlog.Row) (id string, named bool) {
	switch {
	case r.Kind == sessionlog.RowInvalid:
		return "", false
	case r.Wrapper == sessionlog.WrapNone:
		if h := in.dec.Header(); h != nil && h.ID != "" {
			return h.ID, true
		}
		return replay.FallbackSession(in.name), true
	}
	return r.SessionID, r.SessionID != ""
}

// unreadable says a row that could not be read.
func (in *input) unreadable(r *sessionlog.Row) {
	in.unread++
	v := sessionlog.Violation{Line: r.Line, Seq: -1, Code: "ROW_INVALID", Message: "row not decoded"}
	if len(r.Problems) > 0 {
		v = r.Problems[0]
	}
	if in.first == nil {
		in.first = &v
	}
	if in.notes != nil && in.unread <= maxRowNotes {
		fmt.Fprintf(in.notes, "%s:%d: %s (row not read)\n", in.name, v.Line, v)
	}
}

// end is what the end of the input says: the torn tail and the rows not
// read as notes; an error when nothing could be read, or nothing of the
// session asked for.
func (in *input) end() error {
	if in.notes != nil {
		if in.unread > maxRowNotes {
			fmt.Fprintf(in.notes, "%s: %s not read in all\n", in.name, plural(in.unread, "row"))
		}
		if t := in.dec.Tail(); t != nil && in.readable > 0 {
			fmt.Fprintf(in.notes, "%s\n", tailNote(in.name, t))
		}
	}
	if in.readable == 0 {
		return fmt.Errorf("%s: %s", in.name, in.nothingRead())
	}
	if in.session != "" && in.kept == 0 {
		return fmt.Errorf("%s: no session %q in the input (it holds %s)", in.name, in.session, strings.Join(in.sessions, ", "))
	}
	return io.EOF
}

// nothingRead says why an input has no readable row.
func (in *input) nothingRead() string {
	return nothingRead(in.rows, in.unread, in.first, in.dec.Tail(), in.dec.Compressed())
}

// nothingRead says why an input of rows rows, unread of them not
// readable (the first for the reason first), ending in tail, has no
// readable row.
func nothingRead(rows, unread int, first *sessionlog.Violation, tail *sessionlog.Tail, compressed bool) string {
	switch {
	case unread > 0 && first != nil:
		return fmt.Sprintf("no readable row: %s, none readable (line %d: %s)", plural(unread, "row"), first.Line, first)
	case tail != nil && tail.Frame:
		return fmt.Sprintf("no readable row: the input is one incomplete zstd frame (%s decoded without a newline)", plural(tail.Bytes, "byte"))
	case tail != nil && rows == 0:
		return fmt.Sprintf("no readable row: the input is %s without a newline (not a session log, or a torn first row)", plural(tail.Bytes, "byte"))
	case rows == 0 && compressed:
		return "no readable row: the zstd stream is empty"
	case rows == 0:
		return "no readable row: the input is empty"
	}
	return fmt.Sprintf("no readable row: %s, none a session event or header", plural(rows, "row"))
}

// tailNote is the one note every command prints for a torn tail.
func tailNote(name string, t *sessionlog.Tail) string {
	what := fmt.Sprintf("final record of %s has no newline", plural(t.Bytes, "byte"))
	if t.Frame {
		what = fmt.Sprintf("incomplete final zstd frame (%s decoded without a newline)", plural(t.Bytes, "byte"))
	}
	return fmt.Sprintf("%s:%d: note: torn tail: %s", name, t.Line, what)
}

// nounOf is the noun, in the plural unless n is 1.
func nounOf(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// plural is n and the noun, in the plural unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
