//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// No container engine runs where this suite runs, so the compose stacks of
// deploy/compose are checked by reading them: every file they mount exists,
// every collector configuration validates with the distribution, and every
// address one service uses to reach another names a service of the same
// stack on a port that service listens on.

const composeDir = "../deploy/compose"

// Ports the images listen on by themselves (their own defaults, not set by
// a file of ours).
var imagePorts = map[string][]string{
	"jaegertracing/jaeger": {"4317", "4318", "16686"},
	"prom/prometheus":      {"9090"},
	"grafana/grafana":      {"3000"},
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   []string          `yaml:"depends_on"`
}

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

// stack is one compose file read, with what each service listens on.
type stack struct {
	file   string
	c      composeFile
	mounts map[string]map[string]string // service → container path → host path (files and folders)
	listen map[string]map[string]bool   // service → ports
}

var composeVar = regexp.MustCompile(`\$\{([A-Z_]+):-([^}]*)\}`)

// composeDefault expands ${VAR:-default} to its default (the variables are
// the user's; the defaults are what we ship).
func composeDefault(s string) string {
	return composeVar.ReplaceAllString(s, "$2")
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func loadStack(t *testing.T, name string) *stack {
	t.Helper()
	s := &stack{file: name, mounts: map[string]map[string]string{}, listen: map[string]map[string]bool{}}
	readYAML(t, filepath.Join(composeDir, name), &s.c)
	if len(s.c.Services) == 0 {
		t.Fatalf("%s: no services", name)
	}
	hostPorts := map[string]string{}
	for svc, sv := range s.c.Services {
		s.mounts[svc] = map[string]string{}
		s.listen[svc] = map[string]bool{}
		for img, ports := range imagePorts {
			if strings.HasPrefix(sv.Image, img+":") {
				for _, p := range ports {
					s.listen[svc][p] = true
				}
			}
		}
		for _, d := range sv.DependsOn {
			if _, ok := s.c.Services[d]; !ok {
				t.Errorf("%s: %s depends on %q, not a service", name, svc, d)
			}
		}
		if sv.Build != nil {
			df := filepath.Join(composeDir, sv.Build.Context, sv.Build.Dockerfile)
			if _, err := os.Stat(df); err != nil {
				t.Errorf("%s: %s builds from %s: %v", name, svc, df, err)
			}
		}
		for _, v := range sv.Volumes {
			parts := strings.Split(composeDefault(v), ":")
			if len(parts) < 2 {
				t.Errorf("%s: %s: volume %q has no container path", name, svc, v)
				continue
			}
			src, dst := parts[0], parts[1]
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				host := filepath.Join(composeDir, src)
				if _, err := os.Stat(host); err != nil {
					t.Errorf("%s: %s mounts %s: %v", name, svc, src, err)
				}
				s.mounts[svc][dst] = host
			} else if _, ok := s.c.Volumes[src]; !ok {
				t.Errorf("%s: %s mounts the volume %q, which is not declared", name, svc, src)
			}
		}
		for _, p := range sv.Ports {
			// "127.0.0.1:HOST:CONTAINER"
			parts := strings.Split(p, ":")
			if len(parts) != 3 || parts[0] != "127.0.0.1" {
				t.Errorf("%s: %s publishes %q: want 127.0.0.1:HOST:CONTAINER", name, svc, p)
				continue
			}
			if other, dup := hostPorts[parts[1]]; dup {
				t.Errorf("%s: host port %s published by %s and %s", name, parts[1], other, svc)
			}
			hostPorts[parts[1]] = svc
		}
	}
	return s
}

// mounted is the host file behind a container path of a service.
func (s *stack) mounted(t *testing.T, svc, dst string) string {
	t.Helper()
	if h, ok := s.mounts[svc][dst]; ok {
		return h
	}
	for d, h := range s.mounts[svc] {
		if strings.HasPrefix(dst, d+"/") {
			return filepath.Join(h, strings.TrimPrefix(dst, d+"/"))
		}
	}
	t.Errorf("%s: %s uses %s, which nothing mounts", s.file, svc, dst)
	return ""
}

// reaches checks that addr (host:port) names a service of the stack that
// listens on that port.
func (s *stack) reaches(t *testing.T, from, what, addr string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s: %s: %s %q: %v", s.file, from, what, addr, err)
		return
	}
	if _, ok := s.c.Services[host]; !ok {
		t.Errorf("%s: %s: %s %s: no service %q", s.file, from, what, addr, host)
		return
	}
	if !s.listen[host][port] {
		t.Errorf("%s: %s: %s %s: %s listens on %v, not %s", s.file, from, what, addr, host, composeKeys(s.listen[host]), port)
	}
}

func composeKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var collectorEnv = regexp.MustCompile(`\$\{env:([A-Z_]+)(?::-([^}]*))?\}`)

// collectorConfig validates a collector configuration with the distribution
// under the service's environment and returns it with the environment
// substituted, parsed.
func collectorConfig(t *testing.T, bin, file string, env map[string]string) map[string]any {
	t.Helper()
	cmd := exec.Command(bin, "validate", "--config="+file)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("otelcol-dsh validate --config=%s: %v\n%s", file, err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := collectorEnv.ReplaceAllStringFunc(string(b), func(m string) string {
		sub := collectorEnv.FindStringSubmatch(m)
		if v, ok := env[sub[1]]; ok {
			return v
		}
		return sub[2]
	})
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return cfg
}

// cfgDig walks nested maps by keys.
func cfgDig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func addrPort(addr string) string {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return p
}

// TestComposeStacks reads deploy/compose's two stacks (Jaeger, Tempo) as
// files, without Docker. Judged: each has its services; the collector's
// mounted configuration validates with the distribution under the
// service's environment, listens on 0.0.0.0 where it publishes and sends
// its traces to the stack's backend; Prometheus's mounted configuration and
// rules scrape ports the collector listens on; Grafana's data sources,
// dashboards and alert rules are provisioned.
func TestComposeStacks(t *testing.T) {
	bin := lookPath(t, "OTELCOL_DSH", toolsHint)
	for _, tc := range []struct {
		file, traces, backend string
	}{
		{"compose.yaml", "JAEGER_OTLP_ENDPOINT", "jaeger"},
		{"compose.tempo.yaml", "TEMPO_OTLP_ENDPOINT", "tempo"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s := loadStack(t, tc.file)
			for _, svc := range []string{"otelcol-dsh", tc.backend, "prometheus", "grafana"} {
				if _, ok := s.c.Services[svc]; !ok {
					t.Fatalf("no service %q", svc)
				}
			}

			// Tempo listens where its own file says.
			if tc.backend == "tempo" {
				tempoFile := s.mounted(t, "tempo", strings.TrimPrefix(s.c.Services["tempo"].Command[0], "-config.file="))
				var tempo map[string]any
				readYAML(t, tempoFile, &tempo)
				s.listen["tempo"][fmt.Sprint(cfgDig(tempo, "server", "http_listen_port"))] = true
				if e, ok := cfgDig(tempo, "distributor", "receivers", "otlp", "protocols", "grpc", "endpoint").(string); ok {
					s.listen["tempo"][addrPort(e)] = true
				}
			}

			// The collector: its configuration validates, it listens where it
			// publishes, and it sends the traces to the backend.
			col := s.c.Services["otelcol-dsh"]
			var cfgPath string
			for _, a := range col.Command {
				if strings.HasPrefix(a, "--config=") {
					cfgPath = strings.TrimPrefix(a, "--config=")
				}
			}
			if cfgPath == "" {
				t.Fatal("otelcol-dsh: no --config in its command")
			}
			host := s.mounted(t, "otelcol-dsh", cfgPath)
			cfg := collectorConfig(t, bin, host, col.Environment)
			for _, p := range [][]string{
				{"receivers", "session_event", "http", "endpoint"},
				{"receivers", "otlp", "protocols", "grpc", "endpoint"},
				{"receivers", "otlp", "protocols", "http", "endpoint"},
				{"exporters", "prometheus", "endpoint"},
				{"extensions", "health_check", "endpoint"},
			} {
				if e, ok := cfgDig(cfg, p...).(string); ok {
					if !strings.HasPrefix(e, "0.0.0.0:") {
						t.Errorf("otelcol-dsh %s = %s: want 0.0.0.0 (reachable from the other containers)", strings.Join(p, "."), e)
					}
					s.listen["otelcol-dsh"][addrPort(e)] = true
				}
			}
			readers, _ := cfgDig(cfg, "service", "telemetry", "metrics", "readers").([]any)
			for _, r := range readers {
				if p := cfgDig(r, "pull", "exporter", "prometheus", "port"); p != nil {
					s.listen["otelcol-dsh"][fmt.Sprint(p)] = true
				}
			}
			for _, p := range col.Ports {
				cp := p[strings.LastIndex(p, ":")+1:]
				if !s.listen["otelcol-dsh"][cp] {
					t.Errorf("otelcol-dsh publishes %s, but its configuration listens on %v", p, composeKeys(s.listen["otelcol-dsh"]))
				}
			}
			exporters, _ := cfgDig(cfg, "service", "pipelines", "traces", "exporters").([]any)
			if len(exporters) == 0 {
				t.Fatal("otelcol-dsh: no traces exporter")
			}
			for _, e := range exporters {
				ep, _ := cfgDig(cfg, "exporters", fmt.Sprint(e), "endpoint").(string)
				s.reaches(t, "otelcol-dsh", "traces exporter "+fmt.Sprint(e), ep)
			}
			if ep := col.Environment[tc.traces]; ep == "" {
				t.Errorf("otelcol-dsh: %s is not set", tc.traces)
			}

			// Prometheus: its configuration and the rules are mounted, and it
			// scrapes ports the collector listens on.
			prom := s.c.Services["prometheus"]
			var promCfgPath string
			for _, a := range prom.Command {
				if strings.HasPrefix(a, "--config.file=") {
					promCfgPath = strings.TrimPrefix(a, "--config.file=")
				}
			}
			promFile := s.mounted(t, "prometheus", promCfgPath)
			var pc struct {
				RuleFiles     []string `yaml:"rule_files"`
				ScrapeConfigs []struct {
					Job           string `yaml:"job_name"`
					StaticConfigs []struct {
						Targets []string `yaml:"targets"`
					} `yaml:"static_configs"`
				} `yaml:"scrape_configs"`
			}
			readYAML(t, promFile, &pc)
			if len(pc.RuleFiles) == 0 {
				t.Error("prometheus loads no rule files")
			}
			for _, rf := range pc.RuleFiles {
				if h := s.mounted(t, "prometheus", rf); h != "" && filepath.Base(h) != "rules.yaml" {
					t.Errorf("prometheus rule file %s is %s, want deploy/rules.yaml", rf, h)
				}
			}
			scraped := 0
			for _, sc := range pc.ScrapeConfigs {
				for _, st := range sc.StaticConfigs {
					for _, tg := range st.Targets {
						s.reaches(t, "prometheus", "scrape target of "+sc.Job, tg)
						scraped++
					}
				}
			}
			if scraped == 0 {
				t.Error("prometheus scrapes nothing")
			}
			if promtool := os.Getenv("PROMTOOL"); promtool != "" {
				if out, err := exec.Command(promtool, "check", "config", "--syntax-only", promFile).CombinedOutput(); err != nil {
					t.Errorf("promtool check config --syntax-only %s: %v\n%s", promFile, err, out)
				}
			}

			// Grafana: data sources, dashboards and alert rules provisioned.
			checkGrafana(t, s)
		})
	}
}

func checkGrafana(t *testing.T, s *stack) {
	const prov = "/etc/grafana/provisioning"
	var dsFile, dashProv, alertFile string
	for dst := range s.mounts["grafana"] {
		switch {
		case strings.HasPrefix(dst, prov+"/datasources/"):
			dsFile = s.mounts["grafana"][dst]
		case strings.HasPrefix(dst, prov+"/dashboards/"):
			dashProv = s.mounts["grafana"][dst]
		case strings.HasPrefix(dst, prov+"/alerting/"):
			alertFile = s.mounts["grafana"][dst]
		}
	}
	if dsFile == "" || dashProv == "" || alertFile == "" {
		t.Fatalf("grafana: provisioning of data sources %q, dashboards %q, alerting %q: want all three", dsFile, dashProv, alertFile)
	}

	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, URL string
			JSONData             struct {
				Exemplars []struct {
					Name          string `yaml:"name"`
					DatasourceUID string `yaml:"datasourceUid"`
				} `yaml:"exemplarTraceIdDestinations"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, dsFile, &ds)
	uids := map[string]string{}
	for _, d := range ds.Datasources {
		uids[d.UID] = d.Type
		u := strings.TrimPrefix(d.URL, "http://")
		s.reaches(t, "grafana", "data source "+d.Name, u)
	}
	if ds.APIVersion != 1 || uids["prometheus"] != "prometheus" {
		t.Errorf("%s: want apiVersion 1 and a Prometheus data source of uid prometheus (%v)", dsFile, uids)
	}
	for _, d := range ds.Datasources {
		for _, e := range d.JSONData.Exemplars {
			if _, ok := uids[e.DatasourceUID]; !ok {
				t.Errorf("%s: exemplars of %s link to data source %q, not provisioned", dsFile, d.Name, e.DatasourceUID)
			}
		}
	}

	var dp struct {
		Providers []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, dashProv, &dp)
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" {
		t.Fatalf("%s: want one file provider", dashProv)
	}
	dash := s.mounted(t, "grafana", path.Join(dp.Providers[0].Options.Path, "dshtrace-dashboard.json"))
	b, err := os.ReadFile(dash)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title, UID string
		Panels     []any
	}
	if err := json.Unmarshal(b, &d); err != nil || d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Errorf("%s: %v: want a dashboard with title, uid and panels", dash, err)
	}

	checkAlerting(t, alertFile, uids)
}

// checkAlerting requires every alert of deploy/rules.yaml as a Grafana rule
// with the same expression, duration and labels, querying a provisioned
// Prometheus data source.
func checkAlerting(t *testing.T, file string, uids map[string]string) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Expr   string            `yaml:"expr"`
				For    string            `yaml:"for"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, "../deploy/rules.yaml", &rules)
	var g struct {
		APIVersion int `yaml:"apiVersion"`
		Groups     []struct {
			Name, Folder, Interval string
			Rules                  []struct {
				UID, Title, Condition, For string
				Data                       []struct {
					RefID         string         `yaml:"refId"`
					DatasourceUID string         `yaml:"datasourceUid"`
					Model         map[string]any `yaml:"model"`
				} `yaml:"data"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, file, &g)
	type grule struct {
		expr, dur, ds string
		labels        map[string]string
	}
	have := map[string]grule{}
	for _, gr := range g.Groups {
		for _, r := range gr.Rules {
			var q grule
			q.dur, q.labels = r.For, r.Labels
			for _, d := range r.Data {
				if d.RefID == "A" {
					q.ds = d.DatasourceUID
					q.expr = strings.ReplaceAll(fmt.Sprint(d.Model["expr"]), "$$", "$")
				}
			}
			have[r.Title] = q
		}
	}
	n := 0
	for _, gr := range rules.Groups {
		for _, r := range gr.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			q, ok := have[r.Alert]
			switch {
			case !ok:
				t.Errorf("%s: no rule for the alert %s of rules.yaml", file, r.Alert)
			case strings.TrimSpace(q.expr) != strings.TrimSpace(r.Expr):
				t.Errorf("%s: %s: expr %q, rules.yaml has %q", file, r.Alert, q.expr, r.Expr)
			case q.dur != r.For:
				t.Errorf("%s: %s: for %q, rules.yaml has %q", file, r.Alert, q.dur, r.For)
			case fmt.Sprint(q.labels) != fmt.Sprint(r.Labels):
				t.Errorf("%s: %s: labels %v, rules.yaml has %v", file, r.Alert, q.labels, r.Labels)
			case uids[q.ds] != "prometheus":
				t.Errorf("%s: %s queries data source %q, not a provisioned Prometheus", file, r.Alert, q.ds)
			}
		}
	}
	if n == 0 || len(have) != n {
		t.Errorf("%s: %d rules for the %d alerts of rules.yaml", file, len(have), n)
	}
}

// TestDockerfile reads the Dockerfile: a static build, a non-root user, and
// the container configuration it installs validates and listens on 0.0.0.0.
func TestDockerfile(t *testing.T) {
	bin := lookPath(t, "OTELCOL_DSH", toolsHint)
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{"CGO_ENABLED=0", "USER 10001:10001", "cp deploy/collector/container.yaml /out/root/etc/otelcol-dsh/config.yaml",
		`CMD ["--config=/etc/otelcol-dsh/config.yaml"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile: no %q", want)
		}
	}
	cfg := collectorConfig(t, bin, "../deploy/collector/container.yaml", nil)
	var ports []string
	for _, p := range [][]string{
		{"receivers", "session_event", "http", "endpoint"},
		{"exporters", "prometheus", "endpoint"},
		{"extensions", "health_check", "endpoint"},
	} {
		e, _ := cfgDig(cfg, p...).(string)
		if !strings.HasPrefix(e, "0.0.0.0:") {
			t.Errorf("container.yaml %s = %q: want 0.0.0.0:PORT", strings.Join(p, "."), e)
		}
		ports = append(ports, addrPort(e))
	}
	expose := regexp.MustCompile(`(?m)^EXPOSE (.*)$`).FindStringSubmatch(df)
	if expose == nil {
		t.Fatal("Dockerfile: no EXPOSE")
	}
	for _, p := range ports {
		if !strings.Contains(" "+expose[1]+" ", " "+p+" ") {
			t.Errorf("Dockerfile EXPOSE %s lacks %s", expose[1], p)
		}
	}
}
