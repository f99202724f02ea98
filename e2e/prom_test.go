//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// sample is one series of an instant vector.
type sample struct {
	labels map[string]string
	value  float64
}

// promQuery runs an instant query and returns its vector (a scalar comes
// back as one sample without labels).
func promQuery(ctx context.Context, base, expr string) ([]sample, error) {
	code, body, err := get(ctx, base+"/api/v1/query?query="+url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("HTTP %d: %w", code, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, r.Error)
	}
	switch r.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(r.Data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]sample, 0, len(vec))
		for _, v := range vec {
			f, _ := strconv.ParseFloat(fmt.Sprint(v.Value[1]), 64)
			out = append(out, sample{labels: v.Metric, value: f})
		}
		return out, nil
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		f, _ := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
		return []sample{{value: f}}, nil
	default:
		return nil, fmt.Errorf("query %q: result type %s", expr, r.Data.ResultType)
	}
}

// labels the exporter and the scrape add to every series; they take no part
// in comparing series with the engine's data points.
var addedLabels = map[string]bool{"job": true, "instance": true, "otel_scope_name": true,
	"otel_scope_version": true, "otel_scope_schema_url": true}

// seriesKey identifies a series by its name and the labels the data point
// carried.
func seriesKey(name string, labels map[string]string) string {
	var parts []string
	for k, v := range labels {
		if k == "__name__" || addedLabels[k] || strings.HasPrefix(k, "otel_scope_") {
			continue
		}
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

func attrLabels(m pcommon.Map) map[string]string {
	out := map[string]string{}
	for k, v := range m.All() {
		out[promLabel(k)] = v.AsString()
	}
	return out
}

// expectedSeries maps the engine's metrics to the Prometheus series they must
// become: each counter's value, each histogram's _count and _sum, the
// open-turns gauge.
func expectedSeries(md pmetric.Metrics) map[string]float64 {
	out := map[string]float64{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				switch m.Type() {
				case pmetric.MetricTypeSum:
					name := promName(m.Name(), m.Unit(), m.Sum().IsMonotonic())
					for _, dp := range m.Sum().DataPoints().All() {
						out[seriesKey(name, attrLabels(dp.Attributes()))] = float64(dp.IntValue()) + dp.DoubleValue()
					}
				case pmetric.MetricTypeGauge:
					name := promName(m.Name(), m.Unit(), false)
					for _, dp := range m.Gauge().DataPoints().All() {
						out[seriesKey(name, attrLabels(dp.Attributes()))] = float64(dp.IntValue()) + dp.DoubleValue()
					}
				case pmetric.MetricTypeHistogram:
					name := promName(m.Name(), m.Unit(), false)
					for _, dp := range m.Histogram().DataPoints().All() {
						l := attrLabels(dp.Attributes())
						out[seriesKey(name+"_count", l)] = float64(dp.Count())
						out[seriesKey(name+"_sum", l)] = dp.Sum()
					}
				}
			}
		}
	}
	return out
}

// storedSeries reads from Prometheus every series of the names in want.
func storedSeries(ctx context.Context, base, job string, want map[string]float64) (map[string]float64, error) {
	names := map[string]bool{}
	for k := range want {
		names[k[:strings.IndexByte(k, '{')]] = true
	}
	var list []string
	for n := range names {
		list = append(list, regexp.QuoteMeta(n))
	}
	sort.Strings(list)
	res, err := promQuery(ctx, base, fmt.Sprintf(`{__name__=~"%s",job=%q}`, strings.Join(list, "|"), job))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range res {
		out[seriesKey(s.labels["__name__"], s.labels)] = s.value
	}
	return out, nil
}

// diffSeries lists the series whose stored value differs from the expected
// one, and series that exist on one side only.
func diffSeries(want, got map[string]float64) []string {
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+k)
		case !near(g, w):
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected %s = %v", k, g))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, a, -a, b, -b)
}

// dashboardExprs returns every PromQL expression of a Grafana dashboard,
// panels nested in rows included, with Grafana's variables replaced the way
// Grafana would with "All" selected.
func dashboardExprs(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var exprs []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok {
				exprs = append(exprs, grafanaVars(e))
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(doc)
	sort.Strings(exprs)
	return exprs, nil
}

var grafanaVar = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)

// grafanaVars substitutes Grafana's built-in intervals (sized for the e2e
// scrape interval of 2s) and the dashboard's variables (their "All" value,
// .*, only ever used inside =~"...").
func grafanaVars(e string) string {
	e = strings.NewReplacer("$__rate_interval", "30s", "$__interval", "10s", "$__range", "1h").Replace(e)
	return grafanaVar.ReplaceAllString(e, ".*")
}

// rule is a loaded rule as Prometheus reports it.
type rule struct {
	Name, Query, Type, Health, LastError string
	LastEvaluation                       time.Time
}

func promRules(ctx context.Context, base string) ([]rule, error) {
	code, body, err := get(ctx, base+"/api/v1/rules")
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				Rules []rule `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("rules: HTTP %d %v %s", code, err, body)
	}
	var out []rule
	for _, g := range r.Data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// comparison is a comparison operator between spaces (rules.yaml's
// convention; label matchers are written without spaces).
var comparison = regexp.MustCompile(` (==|!=|>=|<=|>|<) `)

// withBool turns every comparison of an alert's expression into its bool
// form: the expression then returns its operands' series (as 0 or 1) whether
// or not the alert would fire, so that "returns series" checks the inputs.
func withBool(expr string) string {
	return comparison.ReplaceAllString(expr, " $1 bool ")
}

// selectors returns every series selector of a PromQL expression, as
// Prometheus parses it (/api/v1/parse_query): metric name and label matchers,
// written back as `{__name__="…",label="…"}`.
func selectors(ctx context.Context, base, expr string) ([]string, error) {
	code, body, err := get(ctx, base+"/api/v1/parse_query?query="+url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   any    `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		return nil, fmt.Errorf("parse_query %q: HTTP %d %v %s", expr, code, err, r.Error)
	}
	seen := map[string]bool{}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if t, _ := v["type"].(string); t == "vectorSelector" || t == "matrixSelector" {
				var ms []string
				for _, m := range v["matchers"].([]any) {
					m := m.(map[string]any)
					ms = append(ms, fmt.Sprintf("%s%s%s", strconv.Quote(m["name"].(string)), m["type"], strconv.Quote(m["value"].(string))))
				}
				sort.Strings(ms)
				if s := "{" + strings.Join(ms, ",") + "}"; !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(r.Data)
	sort.Strings(out)
	return out, nil
}

// selectsSeries is a poll check: every selector of expr selects at least one
// series. A ratio written as `(A or B * 0) / B`, or a `… or vector(0)`,
// returns series even when A names no metric at all; this catches it.
func selectsSeries(ctx context.Context, base, expr string) func() error {
	return func() error {
		sels, err := selectors(ctx, base, expr)
		if err != nil {
			return err
		}
		if len(sels) == 0 {
			return fmt.Errorf("no selector in %q", expr)
		}
		for _, s := range sels {
			res, err := promQuery(ctx, base, "count("+s+")")
			if err != nil {
				return err
			}
			if len(res) == 0 {
				return fmt.Errorf("selector %s selects no series", s)
			}
		}
		return nil
	}
}
