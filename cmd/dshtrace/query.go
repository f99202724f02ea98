package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// queryMode is what a query selects.
type queryMode int

const (
	byTurn    queryMode = iota // --turn N
	byCallID                   // --call-id ID
	bySources                  // --sources SEQ
)

// queryArgs are a parsed query command line.
type queryArgs struct {
	file       string
	mode       queryMode
	turn       int64
	callID     string
	seq        int64
	transitive bool
	session    string
}

// runQuery prints the physical rows behind a turn (--turn N), a tool round
// trip (--call-id ID) or a seq's citations (--sources SEQ [--transitive]),
// byte for byte and in file order, each row at most once. Exit 0 when a row
// matched, 1 when none did, 2 on unreadable input or bad flags.
func runQuery(e *env, args []string) error {
	q, err := parseQuery(e, args)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	var m *matched
	switch q.mode {
	case byTurn, byCallID:
		m, err = queryStream(q, e, w)
	case bySources:
		m, err = querySources(q, e, w)
	}
	if err != nil {
		return err
	}
	if m.rows == 0 {
		return &exitError{code: 1, err: fmt.Errorf("%s: %s", q.file, q.nothing())}
	}
	if len(m.sessions) > 1 {
		w.Flush()
		fmt.Fprintf(e.stderr, "%s: note: the rows are of %s (%s); --session ID keeps one\n",
			q.file, plural(len(m.sessions), "session"), strings.Join(m.sessions, ", "))
	}
	return nil
}

// matched counts the rows printed and names their sessions.
type matched struct {
	rows     int
	sessions []string
}

// add counts a row of session id.
func (m *matched) add(id string) {
	m.rows++
	if id != "" && !slices.Contains(m.sessions, id) {
		m.sessions = append(m.sessions, id)
	}
}

// parseQuery reads `FILE (--turn N | --call-id ID | --sources SEQ
// [--transitive]) [--session ID]`, in any order.
func parseQuery(e *env, args []string) (*queryArgs, error) {
	q := &queryArgs{}
	fs := newFlags("query")
	fs.Int64Var(&q.turn, "turn", 0, "the rows of turn `N`")
	fs.StringVar(&q.callID, "call-id", "", "the rows of the tool round trip of call `ID` (a nested dispatch's id too)")
	fs.Int64Var(&q.seq, "sources", 0, "the rows cited by the sourceEventSeqs of `SEQ`")
	fs.BoolVar(&q.transitive, "transitive", false, "with --sources: follow citations recursively")
	fs.StringVar(&q.session, "session", "", "read only the rows of session `ID` (an input may be a stream of several)")
	files, err := parseArgs(e, fs, args, oneFile)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := q.validate(set); err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	q.file = files[0]
	switch {
	case set["turn"]:
		q.mode = byTurn
	case set["call-id"]:
		q.mode = byCallID
	default:
		q.mode = bySources
	}
	return q, nil
}

// validate checks the flags set: one mode, each flag's value in range.
func (q *queryArgs) validate(set map[string]bool) error {
	modes := 0
	for _, m := range []string{"turn", "call-id", "sources"} {
		if set[m] {
			modes++
		}
	}
	switch {
	case modes != 1:
		return errors.New("want exactly one of --turn, --call-id, --sources")
	case set["transitive"] && !set["sources"]:
		return errors.New("--transitive needs --sources")
	case set["turn"] && q.turn < 0:
		return fmt.Errorf("--turn %d: turn numbers are not negative", q.turn)
	case set["call-id"] && q.callID == "":
		return errors.New("--call-id needs a non-empty ID")
	case set["sources"] && q.seq < 0:
		return fmt.Errorf("--sources %d: seqs are not negative", q.seq)
	}
	return nil
}

// nothing says what was not found.
func (q *queryArgs) nothing() string {
	switch q.mode {
	case byTurn:
		return fmt.Sprintf("no turn/start for turn %d", q.turn)
	case byCallID:
		return fmt.Sprintf("no row of call %q", q.callID)
	}
	return fmt.Sprintf("seq %d is absent or cites nothing that is present", q.seq)
}

// eachRow reads the query's input and calls fn for every row, stopping at
// the first error. Errors name the file and line.
func eachRow(q *queryArgs, e *env, r io.Reader, fn func(*input, *sessionlog.Row)) error {
	in, err := newInput(q.file, r, q.session, e.stderr, false)
	if err != nil {
		return err
	}
	defer in.Close()
	for {
		row, err := in.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(in, row)
	}
}

// writeRow writes a row's bytes as read, with a newline.
func writeRow(w io.Writer, r *sessionlog.Row) {
	w.Write(r.Bytes)
	w.Write([]byte{'\n'})
}

// queryStream answers --turn and --call-id in one pass, holding only the
// state of each session's open turn.
func queryStream(q *queryArgs, e *env, w io.Writer) (*matched, error) {
	f, err := openInput(q.file, e.stdin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var match func(*sessionlog.Row, sessionlog.Format) bool
	if q.mode == byTurn {
		match = turnMatcher(q.turn)
	} else {
		match = callMatcher(q.callID)
	}
	m := &matched{}
	err = eachRow(q, e, f, func(in *input, r *sessionlog.Row) {
		if match(r, in.Format()) {
			writeRow(w, r)
			id, _ := in.sessionOf(r)
			m.add(id)
		}
	})
	return m, err
}

// cursors keeps a turn-model cursor per session of the input.
type cursors map[string]*turnmodel.Cursor

func (cs cursors) of(r *sessionlog.Row) *turnmodel.Cursor {
	key := sessionKey(r)
	c := cs[key]
	if c == nil {
		c = turnmodel.NewCursor(key)
		cs[key] = c
	}
	if r.Header != nil && r.Header.HasSeedLength {
		c.SetFork(r.Header.ParentSession, r.Header.SeedLength)
	}
	return c
}

// turnMatcher matches every row of a session from turn/start N through
// turn/end N, as the turn model places them: the events in turn N and the
// stray ones while it is open. A turn left open runs until the next
// turn/start or the end of the input.
func turnMatcher(turn int64) func(*sessionlog.Row, sessionlog.Format) bool {
	cs := cursors{}
	return func(r *sessionlog.Row, f sessionlog.Format) bool {
		c := cs.of(r)
		hit := false
		for i := range r.Events {
			e := &r.Events[i]
			open := c.OpenTurn()
			m := e.TurnModel(f)
			pl := c.Advance(&m)
			if pl.Kind != turnmodel.KindNone && pl.Turn == turn || e.Type != "turn/start" && open == turn {
				hit = true
			}
		}
		return hit
	}
}

// callMatcher matches the rows of one tool round trip: the assistant/message
// that advertised the call, its tool/call, its tool/result(s) (paired by
// the turn model's rules, so seed-dialect results without a call id
// count), and the dispatch sub-calls under it. id may be a dispatch's own
// sub-call id (as `turns` prints it): its dispatch rows and those of the
// sub-calls under it match.
func callMatcher(id string) func(*sessionlog.Row, sessionlog.Format) bool {
	cs := cursors{}
	under := map[string]bool{id: true} // the call and the sub-calls found under it
	return func(r *sessionlog.Row, f sessionlog.Format) bool {
		c := cs.of(r)
		hit := false
		for i := range r.Events {
			e := &r.Events[i]
			m := e.TurnModel(f)
			pl := c.Advance(&m)
			switch e.Type {
			case "assistant/message":
				if slices.ContainsFunc(e.Advertised, func(c sessionlog.ToolCallRef) bool { return c.ID == id }) {
					hit = true
				}
			case "tool/call", "tool/result":
				if e.CallID == id || pl.Kind == turnmodel.KindTool && pl.CallID == id {
					hit = true
				}
			case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
				if under[e.SubCallID] || under[e.CallID] || under[e.RootCallID] {
					hit = true
					if e.SubCallID != "" {
						under[e.SubCallID] = true
					}
				}
			}
		}
		return hit
	}
}

// seqKey names one event: its session and seq.
type seqKey struct {
	session string
	seq     int64
}

// querySources answers --sources in two passes: the first collects the
// citations (sourceEventSeqs only, never rows) and resolves the cited set,
// the second prints the rows holding it. Standard input is buffered so it
// can be read twice.
func querySources(q *queryArgs, e *env, w io.Writer) (*matched, error) {
	open := func() (io.ReadCloser, error) { return openInput(q.file, e.stdin) }
	if q.file == "-" {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return nil, fmt.Errorf("-: %v", err)
		}
		open = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	f, err := open()
	if err != nil {
		return nil, err
	}
	cites, err := readCitations(q, e, f)
	f.Close()
	if err != nil {
		return nil, err
	}
	m := &matched{}
	want := citedSet(q, cites)
	if len(want) == 0 {
		return m, nil
	}
	// Pass 2: the rows holding a wanted event; the first pass said what
	// could not be read.
	if f, err = open(); err != nil {
		return nil, err
	}
	defer f.Close()
	quiet := *e
	quiet.stderr = io.Discard
	err = eachRow(q, &quiet, f, func(in *input, r *sessionlog.Row) {
		key := sessionKey(r)
		if slices.ContainsFunc(r.Events, func(e sessionlog.Event) bool { return want[seqKey{key, e.Seq}] }) {
			writeRow(w, r)
			id, _ := in.sessionOf(r)
			m.add(id)
		}
	})
	return m, err
}

// readCitations is the first pass: each event's sourceEventSeqs, of the
// queried seq only or, with --transitive, of every event up to it.
func readCitations(q *queryArgs, e *env, f io.Reader) (map[seqKey][]int64, error) {
	cites := map[seqKey][]int64{}
	err := eachRow(q, e, f, func(_ *input, r *sessionlog.Row) {
		key := sessionKey(r)
		for _, e := range r.Events {
			if len(e.Sources) > 0 && (q.transitive || e.Seq == q.seq) && e.Seq <= q.seq {
				k := seqKey{key, e.Seq}
				cites[k] = append(cites[k], e.Sources...)
			}
		}
	})
	return cites, err
}

// citedSet is what the queried seq cites: directly, or with --transitive
// down to events that cite nothing.
func citedSet(q *queryArgs, cites map[seqKey][]int64) map[seqKey]bool {
	want := map[seqKey]bool{}
	var queue []seqKey
	add := func(from seqKey) {
		for _, s := range cites[from] {
			c := seqKey{from.session, s}
			if !want[c] {
				want[c] = true
				queue = append(queue, c)
			}
		}
	}
	for k := range cites {
		if k.seq == q.seq {
			add(k)
		}
	}
	for q.transitive && len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		add(k)
	}
	return want
}
