package main

import (
	"errors"
	"io"
)

func runDerive(args []string, stdin io.Reader, stdout io.Writer) error {
	return &exitError{code: 2, err: errors.New("derive: not implemented yet")}
}
