package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/dshtrace/dshtrace/cmd/dshtrace/internal/replay"
)

// runReplay writes the replay page of one session file: one self-contained
// HTML document (internal/replay), to -o FILE or standard output.
func runReplay(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "-", "write the page to `FILE.html` (- for standard output)")
	jaeger := fs.String("jaeger", "", "link each turn to its trace in the Jaeger UI at `URL` (e.g. http://localhost:16686)")
	noContent := fs.Bool("no-content", false, "leave out every message and tool payload: structure, timings, tokens and ids only")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("replay: %v", err)}
	}
	if len(files) != 1 {
		return &exitError{code: 2, err: errors.New("replay: want exactly one SESSION_FILE")}
	}
	if err := checkJaeger(*jaeger); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("replay: %v", err)}
	}
	name := files[0]
	f, err := openInput(name, stdin)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("replay: %v", err)}
	}
	defer f.Close()
	page, err := replay.Build(f, replay.Options{Name: name, NoContent: *noContent})
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("replay: %s: %v", name, err)}
	}
	opts := replay.RenderOptions{Jaeger: *jaeger}
	if *out == "-" {
		return replay.Render(stdout, page, opts)
	}
	if err := writeFile(*out, func(w io.Writer) error { return replay.Render(w, page, opts) }); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("replay: %v", err)}
	}
	return nil
}

// parseInterleaved parses flags that may come before or after the
// positional arguments, and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
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

// writeFile writes a file through a temporary one beside it, renamed into
// place once complete: a failed write leaves no half page. The file is
// its owner's only (0600): a page holds the session's prompts and tool
// payloads.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
