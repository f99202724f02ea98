package main

import "io"

func runDerive(args []string, stdin io.Reader, stdout io.Writer) error { return nil }
func runTurns(args []string, stdin io.Reader, stdout io.Writer) error  { return nil }
func runQuery(args []string, stdin io.Reader, stdout io.Writer) error  { return nil }
