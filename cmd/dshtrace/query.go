package main

import (
	"errors"
	"io"
)

func runQuery(args []string, stdin io.Reader, stdout io.Writer) error {
	return &exitError{code: 2, err: errors.New("query: not implemented yet")}
}
