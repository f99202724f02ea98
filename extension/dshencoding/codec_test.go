package dshencoding

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// receiverLogs builds the records the session_event receiver builds of a
// log's rows (internal/logrecord), in messages of up to 100 rows, as the
// kafka exporter is handed them.
func receiverLogs(t testing.TB, path string) []plog.Logs {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	dec, err := sessionlog.NewDecoder(bytes.NewReader(raw), sessionlog.Options{})
	require.NoError(t, err)
	defer dec.Close()
	tr := logrecord.NewTracker(turnmodel.Bounds{})
	var out []plog.Logs
	var ld plog.Logs
	var lrs plog.LogRecordSlice
	observed := time.Unix(1790000000, 123456789)
	for n := 0; ; n++ {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			break // an unsupported version: what came before is enough
		}
		if n%100 == 0 {
			ld = plog.NewLogs()
			lrs = logrecord.NewResourceLogs(ld, "session_event", "a-session", map[string]string{"enduser.id": "someone"})
			out = append(out, ld)
		}
		tr.Append(lrs, "a-session", row, dec.Format(), observed)
	}
	return out
}

// requireRoundTrip: ld written and read back is ld — the same OTLP
// protobuf bytes — and compact (or, when not, exactly OTLP protobuf).
func requireRoundTrip(t *testing.T, what string, ld plog.Logs, compact bool) []byte {
	t.Helper()
	want, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	b, err := marshal(ld)
	require.NoError(t, err)
	if compact {
		require.True(t, bytes.HasPrefix(b, []byte(magic)), "%s: not written compactly", what)
	} else {
		require.Equal(t, want, b, "%s: not written as OTLP protobuf", what)
	}
	back, err := unmarshal(b)
	require.NoError(t, err, what)
	got, err := (&plog.ProtoMarshaler{}).MarshalLogs(back)
	require.NoError(t, err)
	require.Equal(t, want, got, "%s: not the same records", what)
	return b
}

// TestReceiverRecordsRoundTrip: the receiver's records of every log of the
// repository's testdata (and the corpus when found) come back the same,
// and smaller than as OTLP protobuf.
func TestReceiverRecordsRoundTrip(t *testing.T) {
	var compact, proto int
	for _, p := range testcorpus.All(t) {
		for _, ld := range receiverLogs(t, p) {
			if ld.LogRecordCount() == 0 {
				continue
			}
			b := requireRoundTrip(t, p, ld, true)
			pb, _ := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
			compact, proto = compact+len(b), proto+len(pb)
		}
	}
	require.NotZero(t, proto)
	require.Less(t, compact, proto)
	t.Logf("compact %d bytes, OTLP protobuf %d (%.2f)", compact, proto, float64(compact)/float64(proto))
}

// TestValuesRoundTrip: every kind the compact form carries, zero values
// and several resources and scopes.
func TestValuesRoundTrip(t *testing.T) {
	ld := plog.NewLogs()
	requireRoundTrip(t, "no logs", ld, true)
	for i := range 2 {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.SetSchemaUrl("https://schema/1")
		rl.Resource().Attributes().PutStr("session.id", "s")
		rl.Resource().Attributes().PutInt("n", int64(i))
		for j := range 2 {
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("scope")
			sl.Scope().SetVersion("v1")
			sl.Scope().Attributes().PutBool("b", j == 1)
			sl.SetSchemaUrl("")
			sl.LogRecords().AppendEmpty() // every field zero, body empty
			lr := sl.LogRecords().AppendEmpty()
			lr.SetTimestamp(pcommon.Timestamp(1<<63 + 5))
			lr.SetObservedTimestamp(1)
			lr.SetSeverityNumber(plog.SeverityNumberError)
			lr.SetSeverityText("ERROR")
			lr.SetEventName("dsh.session.event")
			lr.SetFlags(plog.DefaultLogRecordFlags.WithIsSampled(true))
			lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
			lr.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
			lr.Body().SetStr("{\"type\":\"x\"}\x00ünïcode")
			a := lr.Attributes()
			a.PutStr("s", "")
			a.PutInt("i", -1<<63)
			a.PutBool("t", true)
			a.PutDouble("d", -0.5)
			a.PutStr("s2", "s") // a value repeated as another string
		}
	}
	requireRoundTrip(t, "every kind", ld, true)
}

// TestOtherLogsAsProto: what the compact form does not carry is written as
// OTLP protobuf, and read back.
func TestOtherLogsAsProto(t *testing.T) {
	for name, set := range map[string]func(lr plog.LogRecord){
		"map body":          func(lr plog.LogRecord) { lr.Body().SetEmptyMap().PutStr("a", "b") },
		"bytes body":        func(lr plog.LogRecord) { lr.Body().SetEmptyBytes().FromRaw([]byte{1}) },
		"slice attribute":   func(lr plog.LogRecord) { lr.Attributes().PutEmptySlice("x").AppendEmpty().SetStr("y") },
		"dropped attribute": func(lr plog.LogRecord) { lr.SetDroppedAttributesCount(1) },
	} {
		ld := plog.NewLogs()
		lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.Body().SetStr("row")
		set(lr)
		requireRoundTrip(t, name, ld, false)
	}
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().Resource().SetDroppedAttributesCount(2)
	requireRoundTrip(t, "dropped resource attribute", ld, false)
}

// TestCorruptMessages: every prefix of a compact message, and every
// message with one byte changed, is read without a panic; prefixes are
// refused.
func TestCorruptMessages(t *testing.T) {
	ld := receiverLogs(t, testcorpus.All(t)[0])[0]
	b, err := marshal(ld)
	require.NoError(t, err)
	for n := len(magic); n < len(b); n++ {
		_, err := unmarshal(b[:n])
		require.Error(t, err, "prefix of %d bytes", n)
	}
	for i := len(magic); i < len(b); i++ {
		c := bytes.Clone(b)
		c[i] ^= 0xff
		_, _ = unmarshal(c)
	}
}

func TestExtension(t *testing.T) {
	f := NewFactory()
	require.Equal(t, "dsh_encoding", f.Type().String())
	ext, err := f.Create(context.Background(), extension.Settings{ID: component.NewID(f.Type()),
		TelemetrySettings: componenttest.NewNopTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}, f.CreateDefaultConfig())
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	m, ok := ext.(plog.Marshaler)
	require.True(t, ok)
	u, ok := ext.(plog.Unmarshaler)
	require.True(t, ok)
	ld := receiverLogs(t, testcorpus.All(t)[0])[0]
	b, err := m.MarshalLogs(ld)
	require.NoError(t, err)
	back, err := u.UnmarshalLogs(b)
	require.NoError(t, err)
	require.Equal(t, ld.LogRecordCount(), back.LogRecordCount())
	require.NoError(t, ext.Shutdown(context.Background()))
}

func BenchmarkUnmarshal(b *testing.B) {
	lds := receiverLogs(&testing.T{}, testcorpus.All(&testing.T{})[0])
	for _, enc := range []string{"otlp_proto", "dsh_encoding"} {
		var msgs [][]byte
		for _, ld := range lds {
			var m []byte
			if enc == "otlp_proto" {
				m, _ = (&plog.ProtoMarshaler{}).MarshalLogs(ld)
			} else {
				m, _ = marshal(ld)
			}
			msgs = append(msgs, m)
		}
		b.Run(enc, func(b *testing.B) {
			for b.Loop() {
				for _, m := range msgs {
					if _, err := unmarshal(m); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func BenchmarkMarshal(b *testing.B) {
	lds := receiverLogs(&testing.T{}, testcorpus.All(&testing.T{})[0])
	b.Run("otlp_proto", func(b *testing.B) {
		for b.Loop() {
			for _, ld := range lds {
				if _, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("dsh_encoding", func(b *testing.B) {
		for b.Loop() {
			for _, ld := range lds {
				if _, err := marshal(ld); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// FuzzUnmarshal: a message from the topic is read without a panic, and
// what reads back is written again to the same logs.
func FuzzUnmarshal(f *testing.F) {
	paths := testcorpus.All(f)
	for _, path := range paths[:min(4, len(paths))] {
		for _, ld := range receiverLogs(f, path) {
			b, err := marshal(ld)
			require.NoError(f, err)
			f.Add(bytes.Clone(b))
		}
	}
	f.Add([]byte(magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ld, err := unmarshal(b)
		if err != nil {
			return
		}
		again, err := marshal(ld)
		if err != nil {
			t.Fatalf("read back, the logs do not write: %v", err)
		}
		ld2, err := unmarshal(bytes.Clone(again))
		if err != nil {
			t.Fatalf("written again, the logs do not read: %v", err)
		}
		m := plog.ProtoMarshaler{}
		want, _ := m.MarshalLogs(ld)
		got, _ := m.MarshalLogs(ld2)
		if !bytes.Equal(want, got) {
			t.Fatal("the logs changed through a second write and read")
		}
	})
}
