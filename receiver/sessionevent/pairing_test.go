package sessionevent

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// A seed-dialect tool/result that neither cites the tool/call nor names an
// open call's tool closes no call: the whole session is refused with the
// turn model's verdict, naming the row, and nothing is emitted. The same
// session with a result that names the tool is accepted.
func TestHTTPSeedResultOfNoCall(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	session := func(result string) []byte {
		return []byte(strings.Join([]string{
			`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`,
			`{"type":"step/start","seq":1,"time":2,"data":{"turn":1,"step":1}}`,
			`{"type":"assistant/message","seq":2,"time":3,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"bash","input":{}}]}},"surfaceOp":"append"}`,
			`{"type":"tool/call","seq":3,"time":4,"data":{"turn":1,"step":1,"callId":"call_1","name":"bash","arguments":"{}"}}`,
			result,
			`{"type":"step/end","seq":5,"time":6,"data":{"turn":1,"step":1}}`,
			`{"type":"turn/end","seq":6,"time":7,"data":{"turn":1,"reason":{"kind":"completed"}}}`,
		}, "\n") + "\n")
	}
	res := post(t, sessionURL(s, "seed-unpaired"), session(
		`{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"grep","content":"x","isError":false}},"surfaceOp":"append"}`))
	require.Equal(t, http.StatusBadRequest, res.status, res.body)
	assert.Equal(t, "TOOL_RESULT_NO_CALL", res.body["code"])
	assert.EqualValues(t, 4, res.body["seq"])
	assert.Zero(t, sink.LogRecordCount())

	res = post(t, sessionURL(s, "seed-paired"), session(
		`{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"bash","content":"x","isError":false}},"surfaceOp":"append"}`))
	require.Equal(t, http.StatusAccepted, res.status, res.body)
	assert.Equal(t, 7, res.int("accepted"))
}
