package main

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoFile is a file of the repository's testdata.
func repoFile(rel string) string { return filepath.Join("..", "..", "testdata", rel) }

// badInputs are the kinds of input a command may be given that are not a
// session log, or not only one; each maps to its file.
func badInputs(t *testing.T) map[string]string {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, b, 0o644))
		return p
	}
	random := make([]byte, 200)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.IntN(256))
		if random[i] == '\n' {
			random[i] = 'x' // 200 random bytes without a newline
		}
	}
	sub := filepath.Join(dir, "dir")
	must(t, os.Mkdir(sub, 0o755))
	return map[string]string{
		"missing":   filepath.Join(dir, "missing.jsonl"),
		"directory": sub,
		"empty":     write("empty.jsonl", nil),
		"non-JSON":  write("notes.txt", []byte("these are my notes\nnot a log\n")),
		"random":    write("random.bin", random),
		"malformed": repoFile("hostile/malformed-json.jsonl"),
	}
}

// TestCLI runs every command as a person would: --help, flags after the
// files, each kind of bad input, -o onto what it must not replace; it
// compares the exit code and the first line of standard error.
func TestCLI(t *testing.T) {
	bad := badInputs(t)
	good := repoFile("dialects/v4-tools.jsonl")
	// Each command with the flags it needs to run.
	cmds := []struct {
		name  string
		flags []string
	}{
		{"check", nil}, {"derive", nil}, {"turns", nil}, {"spans", nil},
		{"query", []string{"--turn", "1"}}, {"replay", nil},
	}
	type tc struct {
		args      []string
		code      int
		stderr    string // the first line of standard error, "" for none; a trailing * matches a prefix
		stdoutHas string
	}
	var cases []tc
	for _, c := range cmds {
		n := c.name
		cases = append(cases,
			tc{args: []string{n, "--help"}, stdoutHas: "usage: dshtrace " + n + " "},
			tc{args: []string{n, "-h"}, stdoutHas: "usage: dshtrace " + n + " "},
			tc{args: append([]string{n}, c.flags...), code: 2, stderr: "dshtrace " + n + ": want *"},
			tc{args: append([]string{n, good, "--bogus"}, c.flags...), code: 2, stderr: "dshtrace " + n + ": unknown flag --bogus"},
			tc{args: append([]string{n, bad["missing"]}, c.flags...), code: 2, stderr: "dshtrace " + n + ": " + bad["missing"] + ": no such file or directory"},
			tc{args: append([]string{n, bad["directory"]}, c.flags...), code: 2, stderr: "dshtrace " + n + ": " + bad["directory"] + ": is a directory, not a session log"},
			tc{args: append([]string{n, bad["empty"]}, c.flags...), code: 2, stderr: "dshtrace " + n + ": " + bad["empty"] + ": no readable row: the input is empty"},
			tc{args: append([]string{n, bad["random"]}, c.flags...), code: 2,
				stderr: "dshtrace " + n + ": " + bad["random"] + ": no readable row: the input is 200 bytes without a newline (not a session log, or a torn first row)"},
		)
		// Flags after the file, and the session named.
		cases = append(cases, tc{args: append(append([]string{n, good}, c.flags...), "--session", "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d")})
		cases = append(cases, tc{args: append(append([]string{n, good}, c.flags...), "--session", "other"), code: 2,
			stderr: "dshtrace " + n + ": " + good + `: no session "other" in the input (it holds 9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d)`})
		if n == "check" {
			// check reports what it could not read as violations (exit 1).
			cases = append(cases,
				tc{args: []string{n, bad["non-JSON"]}, code: 2, stderr: "dshtrace check: " + bad["non-JSON"] + ": no readable row: 2 rows, none readable (line 1: seq -: JSON_INVALID: invalid literal at byte 0)"},
				tc{args: []string{n, bad["malformed"]}, code: 1, stdoutHas: ":3: seq -: JSON_INVALID: unexpected end of row"},
				tc{args: []string{n, good, "--json"}, stdoutHas: `"format":"v4","version":4`})
			continue
		}
		cases = append(cases,
			tc{args: append([]string{n, bad["non-JSON"]}, c.flags...), code: 2, stderr: bad["non-JSON"] + ":1: seq -: JSON_INVALID: invalid literal at byte 0 (row not read)"},
			tc{args: append([]string{n, bad["malformed"]}, c.flags...), code: 0, stderr: bad["malformed"] + ":3: seq -: JSON_INVALID: unexpected end of row inside a container at byte 80 (row not read)"})
	}
	// -o never replaces what it must not.
	dir := t.TempDir()
	input := filepath.Join(dir, "s.jsonl")
	log, err := os.ReadFile(good)
	must(t, err)
	must(t, os.WriteFile(input, log, 0o644))
	must(t, os.Symlink(input, filepath.Join(dir, "link.jsonl")))
	cases = append(cases,
		tc{args: []string{"replay", "-o", input, input}, code: 2, stderr: "dshtrace replay: -o " + input + ": is the input " + input + "; the page would replace the log"},
		tc{args: []string{"replay", input, "-o", filepath.Join(dir, "link.jsonl")}, code: 2, stderr: "dshtrace replay: -o " + filepath.Join(dir, "link.jsonl") + ": is the input " + input + "; the page would replace the log"},
		tc{args: []string{"replay", input, "-o", dir}, code: 2, stderr: "dshtrace replay: -o " + dir + ": is a directory; name the page's file, e.g. -o " + filepath.Join(dir, "session.html")},
		tc{args: []string{"replay", input, "-o", os.DevNull}, code: 2, stderr: "dshtrace replay: -o /dev/null: not a regular file (a device); to write there, leave out -o and redirect standard output"},
		tc{args: []string{"replay", input, "-o", filepath.Join(dir, "no", "x.html")}, code: 2, stderr: "dshtrace replay: -o " + filepath.Join(dir, "no", "x.html") + ": no directory " + filepath.Join(dir, "no") + " to write it in"},
		tc{args: []string{"replay", bad["missing"], "-o", filepath.Join(dir, "x.html")}, code: 2, stderr: "dshtrace replay: " + bad["missing"] + ": no such file or directory"},
	)
	// serve, which takes roots.
	cases = append(cases,
		tc{args: []string{"serve", "--help"}, stdoutHas: "usage: dshtrace serve "},
		tc{args: []string{"serve"}, code: 2, stderr: "dshtrace serve: want at least one ROOT (a dsh session root, e.g. ~/.dsh/sessions), got none (dshtrace serve --help)"},
		tc{args: []string{"serve", dir, "--turns-per-page", "0"}, code: 2, stderr: "dshtrace serve: --turns-per-page 0: want 1 or more"},
		tc{args: []string{"serve", bad["missing"]}, code: 2, stderr: "dshtrace serve: session root " + bad["missing"] + ": *"},
		tc{args: []string{"bogus"}, code: 2, stderr: `dshtrace: unknown command "bogus" (dshtrace --help lists them)`},
		tc{args: []string{"--help"}, stdoutHas: "usage: dshtrace <command>"},
	)
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", c.args...)
			first, _, _ := strings.Cut(stderr, "\n")
			want, prefix := strings.CutSuffix(c.stderr, "*")
			if code != c.code || (prefix && !strings.HasPrefix(first, want)) || (!prefix && first != want) {
				t.Errorf("exit %d, stderr %q\nwant exit %d, first line %q", code, first, c.code, c.stderr)
			}
			if !strings.Contains(stdout, c.stdoutHas) {
				t.Errorf("stdout lacks %q:\n%.400s", c.stdoutHas, stdout)
			}
		})
	}
	// The input is untouched.
	if b, err := os.ReadFile(input); err != nil || string(b) != string(log) {
		t.Errorf("-o onto the input changed it")
	}
}

// TestUsageListsEveryFlag: dshtrace --help names every flag of every
// command, in that command's lines.
func TestUsageListsEveryFlag(t *testing.T) {
	lines := map[string]string{} // command → its lines of the usage
	var cur string
	for _, l := range strings.Split(usage, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "      ") {
			if _, ok := commands[f[0]]; ok {
				cur = f[0]
			}
		}
		if cur != "" {
			lines[cur] += l + "\n"
		}
	}
	flagRe := regexp.MustCompile(`(?m)^  (--?[a-z-]+)`)
	for name := range commands {
		_, help, _ := runCLI(t, "", name, "--help")
		_ = help
		_, out, _ := runCLI(t, "", name, "--help")
		for _, m := range flagRe.FindAllStringSubmatch(out, -1) {
			if !strings.Contains(lines[name], "["+m[1]+" ") && !strings.Contains(lines[name], "["+m[1]+"]") &&
				!strings.Contains(lines[name], "("+m[1]+" ") && !strings.Contains(lines[name], "| "+m[1]+" ") &&
				!strings.Contains(lines[name], "["+m[1]+"])") {
				t.Errorf("dshtrace --help does not list %s %s", name, m[1])
			}
		}
		if !strings.Contains(strings.Join(strings.Fields(lines[name]), " "), commands[name].synopsis) { // a wrapped synopsis counts
			t.Errorf("dshtrace --help and dshtrace %s --help differ on its synopsis %q", name, commands[name].synopsis)
		}
	}
}

// TestReadmeExamples: every example of README.md whose input is in the
// repository prints, run from the repository's root, exactly what the
// README shows ("…" ends a shortened line: the output starts so), and the
// README's usage is dshtrace --help's.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	must(t, err)
	if !strings.Contains(string(readme), "```\n"+usage+"```\n") {
		t.Errorf("README.md's usage block is not dshtrace --help's:\n%s", usage)
	}
	// The torn-tail example's file: open-turn.jsonl cut before its last newline.
	dir := t.TempDir()
	open, err := os.ReadFile(repoFile("dialects/open-turn.jsonl"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "open-turn-torn.jsonl"), open[:len(open)-1], 0o644))
	examples := readmeExamples(string(readme))
	ran := 0
	for _, ex := range examples {
		args := strings.Fields(ex.command)
		if args[0] == "echo" || skipExample(args) {
			continue
		}
		t.Run(ex.command, func(t *testing.T) {
			root, _ := filepath.Abs(filepath.Join("..", ".."))
			for i, a := range args[1:] {
				switch {
				case a == "open-turn-torn.jsonl":
					t.Chdir(dir)
				case strings.HasPrefix(a, "testdata/"):
					args[i+1] = a
					t.Chdir(root)
				}
			}
			code, stdout, stderr := runCLI(t, "", args[1:]...)
			got := stdout + stderr
			want := ex.output
			if short, ok := strings.CutSuffix(want, "…]\n"); ok {
				want, got = short, got[:min(len(got), len(short))]
			}
			if got != want {
				t.Errorf("exit %d, output\n%s\nREADME shows\n%s", code, got, ex.output)
			}
			if ex.exit >= 0 && code != ex.exit {
				t.Errorf("exit %d, README shows %d", code, ex.exit)
			}
		})
		ran++
	}
	if ran < 10 {
		t.Errorf("only %d README examples ran", ran)
	}
}

// skipExample: examples that write files or serve, which the test does
// not run.
func skipExample(args []string) bool {
	for _, a := range args {
		if a == "-o" || a == ">" || a == "serve" || strings.HasPrefix(a, "~") {
			return true
		}
	}
	return false
}

// readmeExample is one "$ dshtrace …" line of a README code block and the
// lines it prints; exit is the status an "$ echo $?" after it shows, -1
// when none.
type readmeExample struct {
	command, output string
	exit            int
}

// readmeExamples finds every example of a README.
func readmeExamples(readme string) []readmeExample {
	var out []readmeExample
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(readme))
	sc.Buffer(nil, 1<<20)
	var cur *readmeExample
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```"):
			inBlock = !inBlock
			cur = nil
		case !inBlock:
		case strings.HasPrefix(l, "$ echo $?"):
			cur = &readmeExample{command: "echo", exit: -1}
			out = append(out, *cur)
		case strings.HasPrefix(l, "$ "):
			out = append(out, readmeExample{command: strings.TrimPrefix(l, "$ "), exit: -1})
			cur = &out[len(out)-1]
		case cur != nil && cur.command == "echo":
			// the status of the example before
			for i := len(out) - 2; i >= 0; i-- {
				if out[i].command != "echo" {
					if n, err := parseExit(l); err == nil {
						out[i].exit = n
					}
					break
				}
			}
		case cur != nil:
			cur.output += l + "\n"
		}
	}
	return out
}

func parseExit(s string) (int, error) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, os.ErrInvalid
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
