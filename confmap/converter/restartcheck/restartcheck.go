// Package restartcheck is a configuration converter of otelcol-dsh: it
// changes nothing, and at start names, one line each and with the fix,
// every way the configuration breaks dshtrace's restart guarantee — that a
// restart or a crash loses no turn (docs/operating.md, "Restarts and
// crashes"). The guarantee needs the whole pipeline: sources that keep
// their position only once turn_state journaled what they delivered, a
// journal, and a traces exporter whose acceptance is durable. A component
// sees only itself; a converter sees the whole configuration.
package restartcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate"
	"github.com/dshtrace/dshtrace/receiver/sessionevent"
)

// NewFactory returns the converter's factory.
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(set confmap.ConverterSettings) confmap.Converter {
		logger := set.Logger
		if logger == nil {
			logger = zap.NewNop()
		}
		return converter{logger: logger}
	})
}

type converter struct{ logger *zap.Logger }

// Convert logs the configuration's findings and leaves it as it is.
func (c converter) Convert(_ context.Context, conf *confmap.Conf) error {
	for _, f := range Check(conf.ToStringMap()) {
		c.logger.Warn(f.Problem, zap.String("fix", f.Fix), zap.String("rule", f.Rule),
			zap.String("guarantee", "docs/operating.md, Restarts and crashes"))
	}
	return nil
}

// A Finding is one way a configuration loses turns across a restart.
type Finding struct {
	// Rule names the rule broken.
	Rule string
	// Problem says what is lost, and where.
	Problem string
	// Fix says what to change.
	Fix string
}

// The rules.
const (
	RuleNoJournal      = "checkpoints_without_journal"
	RuleBatchBefore    = "batch_before_turn_state"
	RuleMemoryQueue    = "journal_with_memory_queue"
	RuleBatchAfter     = "batch_after_turn_state"
	RuleJournalNoQueue = "journal_without_queue"
)

// The types of dshtrace's components that the rules name, as their
// factories declare them.
var (
	turnStateType    = turnstate.NewFactory().Type().String()
	sessionEventType = sessionevent.NewFactory().Type().String()
)

// queued are the exporter types whose sending queue is on, in memory,
// unless configured otherwise (the collector's exporterhelper).
var queued = []string{"otlp", "otlp_grpc", "otlphttp", "otlp_http", "kafka", "zipkin", "prometheusremotewrite", "loadbalancing"}

// Check reads a collector configuration and returns its findings, in the
// order of its pipelines' names.
func Check(cfg map[string]any) []Finding {
	c := config{raw: cfg}
	var out []Finding
	for _, name := range c.pipelineNames() {
		p := c.pipeline(name)
		switch signalOf(name) {
		case "logs":
			out = append(out, c.checkLogs(name, p)...)
		case "traces":
			out = append(out, c.checkTraces(name, p)...)
		}
	}
	return out
}

// checkLogs: a logs pipeline whose sources keep their position (files or
// HTTP with storage, a Kafka consumer group) and that feeds turn_state.
func (c config) checkLogs(name string, p pipeline) []Finding {
	var sources []string
	for _, r := range p.receivers {
		if c.checkpoints(r) {
			sources = append(sources, r)
		}
	}
	if len(sources) == 0 {
		return nil
	}
	var out []Finding
	for _, x := range p.exporters {
		if typeOf(x) != turnStateType {
			continue
		}
		if !c.journals(x) {
			out = append(out, Finding{Rule: RuleNoJournal,
				Problem: fmt.Sprintf("pipeline %s: %s %s (%s not deliver again what was read) but connector %s keeps no journal: "+
					"the turns open at a restart or crash lose their spans", name, named("receiver", sources),
					plural(len(sources), "keeps its position", "keep their positions"), plural(len(sources), "it does", "they do"), quoteOne(x)),
				Fix: fmt.Sprintf("set connectors::%s::storage to a storage extension (the one the sources use)", x)})
		}
		for _, proc := range p.processors {
			if typeOf(proc) == "batch" {
				out = append(out, Finding{Rule: RuleBatchBefore,
					Problem: fmt.Sprintf("pipeline %s: processor %s answers the sources before %s has the rows, so they move their position past rows a crash then loses",
						name, quoteOne(proc), quoteOne(x)),
					Fix: fmt.Sprintf("remove %s from pipeline %s", proc, name)})
			}
		}
	}
	return out
}

// checkTraces: a traces pipeline fed by a journaling turn_state, whose
// exporters must accept durably.
func (c config) checkTraces(name string, p pipeline) []Finding {
	var from []string
	for _, r := range p.receivers {
		if typeOf(r) == turnStateType && c.journals(r) {
			from = append(from, r)
		}
	}
	if len(from) == 0 {
		return nil
	}
	var out []Finding
	for _, proc := range p.processors {
		if typeOf(proc) == "batch" {
			out = append(out, Finding{Rule: RuleBatchAfter,
				Problem: fmt.Sprintf("pipeline %s: processor %s holds spans in memory after %s let go of their turns: a crash loses them",
					name, quoteOne(proc), named("connector", from)),
				Fix: fmt.Sprintf("remove %s from pipeline %s and batch in the exporter instead (sending_queue::batch)", proc, name)})
		}
	}
	for _, x := range p.exporters {
		q, known := c.queue(x)
		switch {
		case !known:
		case !q.enabled:
			out = append(out, Finding{Rule: RuleJournalNoQueue,
				Problem: fmt.Sprintf("pipeline %s: exporter %s has no sending queue: spans it could not send are dropped after its retries, though %s journals their turns",
					name, quoteOne(x), named("connector", from)),
				Fix: fmt.Sprintf("enable exporters::%s::sending_queue with storage: a storage extension", x)})
		case q.storage == "":
			out = append(out, Finding{Rule: RuleMemoryQueue,
				Problem: fmt.Sprintf("pipeline %s: exporter %s keeps its sending queue in memory: the spans it holds at a crash are lost, though %s journals their turns",
					name, quoteOne(x), named("connector", from)),
				Fix: fmt.Sprintf("set exporters::%s::sending_queue::storage to a storage extension", x)})
		}
	}
	return out
}

// config is a collector configuration as a map.
type config struct{ raw map[string]any }

type pipeline struct{ receivers, processors, exporters []string }

func (c config) section(path ...string) map[string]any {
	m := c.raw
	for _, k := range path {
		next, _ := m[k].(map[string]any)
		m = next
	}
	return m
}

func (c config) pipelineNames() []string {
	var names []string
	for k := range c.section("service", "pipelines") {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func (c config) pipeline(name string) pipeline {
	p := c.section("service", "pipelines", name)
	return pipeline{receivers: strs(p["receivers"]), processors: strs(p["processors"]), exporters: strs(p["exporters"])}
}

// checkpoints reports whether a receiver keeps its read position across a
// restart: session_event with a storage for files or HTTP, or a Kafka
// consumer group (committed offsets).
func (c config) checkpoints(id string) bool {
	r := c.section("receivers", id)
	switch typeOf(id) {
	case sessionEventType:
		for _, transport := range []string{"files", "http"} {
			if t, ok := r[transport].(map[string]any); ok && str(t["storage"]) != "" {
				return true
			}
		}
	case "kafka":
		return true
	}
	return false
}

// journals reports whether a turn_state connector keeps a journal.
func (c config) journals(id string) bool {
	t := c.section("connectors", id)
	return str(t["storage"]) != "" || t["changelog"] != nil
}

type queueConfig struct {
	enabled bool
	storage string
}

// queue is an exporter's sending queue; known is false for an exporter
// type this check does not know to have one.
func (c config) queue(id string) (q queueConfig, known bool) {
	if !slices.Contains(queued, typeOf(id)) {
		return q, false
	}
	sq, _ := c.section("exporters", id)["sending_queue"].(map[string]any)
	q.enabled = true
	if v, ok := sq["enabled"].(bool); ok {
		q.enabled = v
	}
	q.storage = str(sq["storage"])
	return q, true
}

func typeOf(id string) string {
	t, _, _ := strings.Cut(id, "/")
	return t
}

func signalOf(pipeline string) string { return typeOf(pipeline) }

func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, str(e))
	}
	return out
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteOne(id string) string { return fmt.Sprintf("%q", id) }

// named lists ids as "kind "id"", comma-separated.
func named(kind string, ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = kind + " " + quoteOne(id)
	}
	return strings.Join(out, ", ")
}
