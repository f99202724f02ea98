package sessionlog

// RowKind says what a physical row of the input is.
type RowKind uint8

const (
	// RowEvent holds exactly one event, plain or inside a line wrapper.
	RowEvent RowKind = iota
	// RowPacked is a v0/v1 packed chunk row standing for several
	// assistant/chunk events (docs/format.md §5.1).
	RowPacked
	// RowHeader is the session header line (docs/format.md §3).
	RowHeader
	// RowOther is a well-formed line that carries no session event: a
	// session.status notification, a stream-json result line, another
	// JSON-RPC message.
	RowOther
	// RowInvalid could not be decoded; Row.Problems says why.
	RowInvalid
)

var rowKindNames = [...]string{"event", "packed", "header", "other", "invalid"}

func (k RowKind) String() string {
	if int(k) < len(rowKindNames) {
		return rowKindNames[k]
	}
	return "unknown"
}

// Wrapper names the line wrapper a row came in.
type Wrapper uint8

const (
	// WrapNone is a bare row, as in a session file.
	WrapNone Wrapper = iota
	// WrapJSONRPC is an SDK JSON-RPC notification (session.event, session.status, …).
	WrapJSONRPC
	// WrapStreamJSON is a headless {"type":"session_event",…} or {"type":"result",…} line.
	WrapStreamJSON
	// WrapEnvelope is a {"sessionId":…,"event":…} line.
	WrapEnvelope
)

// Row is one physical record of the input. Bytes are exactly what was read
// (without the terminating newline), so the input can be written back byte
// for byte; a packed row keeps its bytes once for all the events it stands for.
type Row struct {
	// Line is the 1-based line number in the (decompressed) input.
	Line int
	// Offset is the byte offset of the row in the (decompressed) input.
	Offset int64
	// Bytes is the row as read, without its newline. The Row owns them.
	Bytes []byte
	Kind  RowKind
	// Wrapper is the line wrapper the row came in, if any.
	Wrapper Wrapper
	// SessionID is the session the row belongs to when the row says so
	// itself (a wrapper's sessionId, a header's id).
	SessionID string
	// Method is the JSON-RPC method or stream-json type of a wrapped row.
	Method string
	// Header is set for RowHeader.
	Header *Header
	// Events are the logical events of the row: one for RowEvent, one per
	// member for RowPacked, none otherwise.
	Events []Event
	// Problems are the violations found while decoding the row (invalid
	// JSON, a bad envelope, lossless-JSON breaches, …). A row with problems
	// may still carry events when the problem does not prevent decoding.
	Problems []Violation
}

// FirstSeq is the seq of the row's first event, -1 for a row without one
// (a header, a status line).
func (r *Row) FirstSeq() int64 {
	if len(r.Events) > 0 {
		return r.Events[0].Seq
	}
	return -1
}

// LastSeq is the seq of the row's last event, -1 for a row without one.
func (r *Row) LastSeq() int64 {
	if n := len(r.Events); n > 0 {
		return r.Events[n-1].Seq
	}
	return -1
}

// Header is the session header line (docs/format.md §3).
type Header struct {
	Version         int
	HasVersion      bool
	ID              string
	CreatedAt       int64
	Cwd             string
	ParentSession   string
	SeedLength      int64
	HasSeedLength   bool
	IsSeeded        bool
	HasIsSeeded     bool
	Origin          string
	DelegationDepth int64
	AgentPreset     string
}

// SurfaceKind classifies an event's surfaceOp.
type SurfaceKind uint8

const (
	// SurfaceNone: the event has no surfaceOp.
	SurfaceNone SurfaceKind = iota
	// SurfaceAppend: "append".
	SurfaceAppend
	// SurfaceReplace: {op:"replace", start/end or startSeq/endSeq}.
	SurfaceReplace
	// SurfaceInvalid: a surfaceOp of no known form (an open union member
	// the decoder does not know, or a malformed replace).
	SurfaceInvalid
)

// SurfaceOp is an event's surface operation (docs/format.md §8.1).
type SurfaceOp struct {
	// Start and End are the first and last replaced surface seqs.
	Start, End int64
	Kind       SurfaceKind
	// SeqKeys is true when the replace used startSeq/endSeq (v3+), false
	// for start/end (v0–v2).
	SeqKeys bool
}

// Usage is a TokenUsage record (docs/format.md §9.1). Counts are disjoint.
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	TotalTokens      int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	ReasoningTokens  int64
}

// Failure is an LlmFailure (docs/format.md §7), as carried by a turn's error reason, a
// finish chunk or an llm/retry.
type Failure struct {
	Code    string
	Message string
	Status  int64
}

// Finish is a stream's terminal finish chunk (docs/format.md §9.3).
type Finish struct {
	// Kind is the FinishReason kind: stop, tool-calls, max-tokens, aborted,
	// error, or an unknown member kept raw.
	Kind    string
	Failure *Failure
}

// Chunk is the typed view of one v0/v1 assistant/chunk event (docs/format.md §9.3).
type Chunk struct {
	// Type is the StreamChunk type (block-start, text-delta, …).
	Type     string
	Index    int64
	HasIndex bool
	// DeltaBytes is the length of a delta's text or arguments (for packed
	// rows, of its JSON-encoded form: zero exactly when the delta is empty).
	DeltaBytes int
	// ID and Name are a tool-call delta's call id and tool name.
	ID, Name string
	Usage    *Usage
	Finish   *Finish
}

// Stream summarizes an embedded v2+ stream (docs/format.md §5.3) of an assistant/message
// or assistant/attempt: what the engine needs for a model-call span.
type Stream struct {
	// Records is the number of AssistantStreamRecords, Chunks the number of
	// logical chunks they expand to.
	Records, Chunks int
	// FirstTime and LastTime bound the stream's chunk times (HasTimes).
	FirstTime, LastTime int64
	HasTimes            bool
	// FirstDeltaTime is the time of the first non-empty delta (HasDelta).
	FirstDeltaTime int64
	HasDelta       bool
	Usage          *Usage
	Finish         *Finish
}

// ToolCallRef is a tool request block of an assistant message: dsh's
// `tool-call` {id, name, arguments} or the seed dialect's `tool_use`
// {id, name, input} (arguments then being the input re-encoded as JSON).
type ToolCallRef struct {
	ID, Name, Arguments string
}

// Reason is a turn/end TurnEndReason (docs/format.md §7), read from its object or, in the
// seed dialect, bare-string form.
type Reason struct {
	// Kind is completed, aborted, blocked, error, max-tokens, interrupted,
	// forked, or an unknown member kept raw.
	Kind string
	// Cause is the aborted reason's cancel-cause kind; HookReason its hook text.
	Cause, HookReason string
	Failure           *Failure
}

// Event is the typed view of one logical session event. Fields a given type
// does not carry are zero. The physical bytes are in Row.
//
// The fields only some event types carry live in the embedded *Detail, so
// a chunk (most events of a v0 log) stays small. Detail is never nil in a
// decoded event: events without details share one zero Detail, which must
// not be written to.
type Event struct {
	// Row is the physical row the event came from.
	Row *Row
	// Member is the event's index among its row's events (packed rows).
	Member int

	Type string
	Seq  int64
	Time int64

	// Turn and Step are data.turn and data.step where the type has them.
	Turn, Step int64

	Surface SurfaceOp
	// Sources is sourceEventSeqs, expanded (docs/format.md §5.2). HasSources says whether
	// the key was present at all ([] and absent mean different things).
	Sources []int64

	// The flags sit together, so that the struct has no padding between
	// fields (a packed row allocates one Event per member).
	Ignorable        bool
	HasTurn, HasStep bool
	HasSources       bool
	// SourcesRanged is true when the physical list used [a,b] pairs.
	SourcesRanged bool

	// Chunk is set for assistant/chunk.
	Chunk *Chunk
	// Stream is set for v2+ assistant/message and assistant/attempt.
	Stream *Stream

	*Detail
}

// noDetail is the Detail of events that carry none.
var noDetail = &Detail{}

// Detail are the fields of tool, message, turn-end, request and retry events.
type Detail struct {
	// CallID: tool/call callId; tool/result call id from the message
	// (toolCallId, source.callId or the tool-result block), empty when the
	// message names none (seed dialect); dispatch events' parentCallId;
	// approval/asked callId.
	CallID string
	// ToolName: tool/call name; seed tool/result toolName; dispatch name.
	ToolName string
	// Arguments is tool/call's raw arguments text.
	Arguments string
	// SubCallID and RootCallID are the dispatch events' ids.
	SubCallID, RootCallID string
	// IsError: tool/result and dispatch error flag; ErrorCode their error.code.
	IsError   bool
	ErrorCode string
	// SyntheticResult: a crash-repair tool result (message id
	// interrupted-tool-result-…).
	SyntheticResult bool
	// HasErrorDetail: a tool/result carries data.error.
	HasErrorDetail bool
	// ResultHash is a tool/result's message content, hashed (FNV-1a) as
	// written: two results of the same content hash alike.
	ResultHash uint64
	// HasSystem: a request/header carries header.system (v0–v2 only).
	HasSystem bool

	// Reason is turn/end's reason.
	Reason Reason

	// Provider and Model: assistant/message source, request/header config,
	// request/context, llm/retry provider.
	Provider, Model string
	// MessageID is data.message.id (or user/message data.id).
	MessageID string
	// Role is the message role of surface events.
	Role string
	// SourceKind is message.source.kind.
	SourceKind string
	// ContentEmpty: the message content is an empty array (or absent).
	ContentEmpty bool
	Usage        *Usage
	Interrupted  bool
	// Advertised are the tool request blocks of an assistant/message.
	Advertised []ToolCallRef

	// Inherited: session/end-seed with data.inherited true.
	Inherited bool
	// Retry is llm/retry's retry number; Failure its failure.
	Retry   int64
	Failure *Failure
}

// Violation is a broken rule of the format, located in the input.
type Violation struct {
	// Line is the 1-based line of the row.
	Line int `json:"line"`
	// Seq is the event's seq, or -1 when unknown.
	Seq     int64  `json:"seq"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// problem records a violation found while decoding the row, at seq.
func (r *Row) problem(seq int64, code, msg string) {
	r.Problems = append(r.Problems, Violation{Line: r.Line, Seq: seq, Code: code, Message: msg})
}
