package main

import (
	"fmt"
	"io"
	"net/url"

	"github.com/dshtrace/dshtrace/cmd/dshtrace/internal/replay"
)

// runReplay writes the replay page of one session file: one self-contained
// HTML document (internal/replay), to -o FILE or standard output.
func runReplay(e *env, args []string) error {
	fs := newFlags("replay")
	out := fs.String("o", "-", "write the page to `FILE.html` (- for standard output); never onto an input, a directory or a device")
	jaeger := fs.String("jaeger", "", "link each turn to its trace in the Jaeger UI at `URL` (e.g. http://localhost:16686)")
	noContent := fs.Bool("no-content", false, "leave out every message and tool payload and what the user wrote (working directory included): structure, timings, tokens and ids only")
	session := sessionFlag(fs)
	files, err := parseArgs(e, fs, args, oneFile)
	if err != nil {
		return err
	}
	if err := checkJaeger(*jaeger); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := checkOutput(*out, files); err != nil {
		return &exitError{code: 2, err: err}
	}
	name := files[0]
	f, err := openInput(name, e.stdin)
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := newInput(name, f, *session, e.stderr, true)
	if err != nil {
		return err
	}
	defer in.Close()
	page, err := replay.BuildRows(in, replay.Options{Name: name, Session: *session, NoContent: *noContent})
	if err != nil {
		return err
	}
	opts := replay.RenderOptions{Jaeger: *jaeger}
	if *out == "-" {
		return replay.Render(e.stdout, page, opts)
	}
	return writeFile(*out, func(w io.Writer) error { return replay.Render(w, page, opts) })
}

// checkJaeger accepts an empty URL or an absolute http(s) one.
func checkJaeger(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--jaeger %q: want the Jaeger UI's URL, such as http://localhost:16686", s)
	}
	return nil
}
