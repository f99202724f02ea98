package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// checkOutput refuses, before any work, an -o path that is not a new or
// regular file, or that is one of the inputs: the page would replace the
// log it is made from.
func checkOutput(out string, inputs []string) error {
	if out == "-" {
		return nil
	}
	fi, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(out)
		if di, err := os.Stat(dir); err != nil || !di.IsDir() {
			return fmt.Errorf("-o %s: no directory %s to write it in", out, dir)
		}
		return nil
	case err != nil:
		return fmt.Errorf("-o %s: %v", out, unwrapPath(err))
	case fi.IsDir():
		return fmt.Errorf("-o %s: is a directory; name the page's file, e.g. -o %s", out, filepath.Join(out, "session.html"))
	case !fi.Mode().IsRegular():
		return fmt.Errorf("-o %s: not a regular file (%s); to write there, leave out -o and redirect standard output", out, fileKind(fi.Mode()))
	}
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		if ii, err := os.Stat(in); err == nil && os.SameFile(fi, ii) {
			return fmt.Errorf("-o %s: is the input %s; the page would replace the log", out, in)
		}
	}
	return nil
}

// fileKind names what a file that is not regular is.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}

// unwrapPath is err without the paths an *os.PathError or *os.LinkError
// adds (the caller names the path itself).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// writeFile writes a file through a temporary one beside it, renamed into
// place once complete: a failed write leaves no half page. The file is
// its owner's only (0600): a page holds the session's prompts and tool
// payloads. Errors name path, never the temporary file.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("-o %s: cannot create a file in %s: %v", path, filepath.Dir(path), unwrapPath(err))
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
		return fmt.Errorf("-o %s: %v", path, unwrapPath(err))
	}
	return nil
}
