package restartcheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	yaml "go.yaml.in/yaml/v3"
)

// restartConfig is the restart configuration of docs/operating.md: sources
// checkpointing in file_storage, turn_state journaling there, the traces
// exporter's queue on disk, batching in the exporter.
const restartConfig = `
extensions:
  file_storage: {directory: /var/lib/otelcol}
receivers:
  session_event:
    http: {endpoint: 127.0.0.1:4320, storage: file_storage}
    files: {include: ["/sessions/**/session*.jsonl*"], storage: file_storage}
processors:
  memory_limiter: {limit_mib: 600, check_interval: 1s}
connectors:
  turn_state: {storage: file_storage}
exporters:
  otlp_grpc/jaeger:
    endpoint: jaeger:4317
    sending_queue: {storage: file_storage, batch: {flush_timeout: 200ms}}
  prometheus: {endpoint: 0.0.0.0:8889}
service:
  extensions: [file_storage]
  pipelines:
    logs: {receivers: [session_event], processors: [memory_limiter], exporters: [turn_state]}
    traces: {receivers: [turn_state], exporters: [otlp_grpc/jaeger]}
    metrics: {receivers: [turn_state], exporters: [prometheus]}
`

func parse(t *testing.T, y string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(y), &m))
	return confmap.NewFromStringMap(m).ToStringMap()
}

// edit applies a change to a parsed configuration.
func edit(t *testing.T, y string, change func(m map[string]any)) map[string]any {
	m := parse(t, y)
	change(m)
	return m
}

func sub(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}

func rules(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func TestRestartConfigurationHasNoFinding(t *testing.T) {
	assert.Empty(t, Check(parse(t, restartConfig)))
}

// Every configuration the repository ships keeps the guarantee.
func TestShippedConfigurations(t *testing.T) {
	files, err := filepath.Glob("../../../deploy/collector/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, "../../../cmd/otelcol-dsh/internal/defaultconfig/default.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		y := strings.NewReplacer("@STATE_DIR@", "/s", "@HTTP_ENDPOINT@", "h:1", "@SESSIONS_GLOB@", "x",
			"@METRICS_ENDPOINT@", "m:1", "@TELEMETRY_HOST@", "t", "@TELEMETRY_PORT@", "1").Replace(string(b))
		assert.Empty(t, Check(parse(t, y)), f)
	}
}

func TestFindings(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(m map[string]any)
		want   []string
		says   string
	}{
		{"no journal", func(m map[string]any) { delete(sub(m, "connectors", "turn_state"), "storage") },
			[]string{RuleNoJournal}, `connector "turn_state" keeps no journal`},
		{"kafka source, no journal", func(m map[string]any) {
			delete(sub(m, "connectors", "turn_state"), "storage")
			sub(m, "receivers")["kafka"] = map[string]any{"brokers": []any{"k:9092"}}
			sub(m, "service", "pipelines", "logs")["receivers"] = []any{"kafka"}
		}, []string{RuleNoJournal}, `receiver "kafka" keeps its position`},
		{"sources without storage", func(m map[string]any) {
			delete(sub(m, "connectors", "turn_state"), "storage")
			delete(sub(m, "receivers", "session_event", "files"), "storage")
			delete(sub(m, "receivers", "session_event", "http"), "storage")
		}, nil, ""},
		{"queue in memory", func(m map[string]any) { delete(sub(m, "exporters", "otlp_grpc/jaeger", "sending_queue"), "storage") },
			[]string{RuleMemoryQueue}, `exporter "otlp_grpc/jaeger" keeps its sending queue in memory`},
		{"no sending_queue section", func(m map[string]any) { delete(sub(m, "exporters", "otlp_grpc/jaeger"), "sending_queue") },
			[]string{RuleMemoryQueue}, "in memory"},
		{"queue off", func(m map[string]any) { sub(m, "exporters", "otlp_grpc/jaeger", "sending_queue")["enabled"] = false },
			[]string{RuleJournalNoQueue}, "has no sending queue"},
		{"batch after", func(m map[string]any) {
			sub(m, "processors")["batch"] = map[string]any{}
			sub(m, "service", "pipelines", "traces")["processors"] = []any{"batch"}
		}, []string{RuleBatchAfter}, `processor "batch" holds spans in memory`},
		{"batch before", func(m map[string]any) {
			sub(m, "processors")["batch/x"] = map[string]any{}
			sub(m, "service", "pipelines", "logs")["processors"] = []any{"memory_limiter", "batch/x"}
		}, []string{RuleBatchBefore}, `processor "batch/x" answers the sources`},
		{"debug exporter needs no queue", func(m map[string]any) {
			sub(m, "exporters")["debug"] = map[string]any{}
			sub(m, "service", "pipelines", "traces")["exporters"] = []any{"debug"}
		}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Check(edit(t, restartConfig, c.change))
			assert.Equal(t, c.want, rules(got))
			for _, f := range got {
				assert.Contains(t, f.Problem, c.says)
				assert.NotEmpty(t, f.Fix)
			}
		})
	}
}

// The converter logs one warning per finding, with the fix, and changes
// nothing.
func TestConverterLogs(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	conv := NewFactory().Create(confmap.ConverterSettings{Logger: zap.New(core)})
	m := edit(t, restartConfig, func(m map[string]any) { delete(sub(m, "connectors", "turn_state"), "storage") })
	conf := confmap.NewFromStringMap(m)
	before := conf.ToStringMap()
	require.NoError(t, conv.Convert(context.Background(), conf))
	assert.Equal(t, before, conf.ToStringMap())
	require.Equal(t, 1, logs.Len())
	e := logs.All()[0]
	assert.Equal(t, zap.WarnLevel, e.Level)
	assert.Contains(t, e.Message, "keeps no journal")
	assert.Contains(t, e.ContextMap()["fix"], "connectors::turn_state::storage")
	assert.Contains(t, e.ContextMap()["guarantee"], "docs/operating.md")
}
