package main

import (
	"errors"
	"io"
)

func runTurns(args []string, stdin io.Reader, stdout io.Writer) error {
	return &exitError{code: 2, err: errors.New("turns: not implemented yet")}
}
