// Package replay builds the replay page of a dsh session: everything of
// each turn as the log says it — what the agent was asked, what the model
// saw before each request, what it answered, what each tool call was given
// and returned, why the turn ended and what it cost — and renders it as one
// self-contained HTML page.
//
// Nothing here re-runs anything or decodes the format a second time: the
// page is a projection of the log. Rows come from sessionlog's Decoder; what
// the model saw at each step is sessionlog's Deriver at the moment
// `dshtrace derive --before-step` names; where each event belongs, and so
// the trace of each turn, is the turn model's cursor; turns, end reasons,
// dangling causes, late closes, tokens and costs are the turn engine's.
// The page links each turn to its trace (the ids are deterministic), each
// call to its result, and each message to the rows it cites.
//
// The page's skeleton and the session list are html/template templates; a
// session's turns, repeated by the thousand, are written by small functions
// (turn.go, leaves.go, rows.go) that escape every value as html/template's
// escaper does (FuzzEscape holds the two equal). Either way every piece of
// log content is escaped; the page carries a Content-Security-Policy that
// allows its own style and script only, and makes no request to anything
// outside itself. A long session's turns are folded: each body compressed
// in the page, unfolded by the page's script when opened or linked to
// (fold.go).
//
// A session of ten thousand turns is a log of a hundred megabytes and more:
// the page keeps the rows' bytes compressed (raw.go), reads message content
// with a one-pass scanner (scan.go), and is streamed — its blocks rendered
// in parallel and written in order as they are done, never held whole
// (blocks.go).
package replay
