// Hand-written, not generated: ocb rewrites only its own files in this
// directory and leaves this one alone.

package main

import (
	"fmt"
	"os"

	"github.com/dshtrace/dshtrace/cmd/otelcol-dsh/internal/defaultconfig"
)

// Without --config and without a subcommand, otelcol-dsh runs its built-in
// configuration (internal/defaultconfig): HTTP ingest on localhost:4320, the
// dsh session root tailed, a line per finished turn, metrics on
// localhost:8889, its own metrics on localhost:8888. When it is to run the
// collector, each of those addresses is tried first: a taken one is a single
// line naming it and the variable that moves it, not a startup trace.
func init() {
	if !defaultconfig.NeedsDefault(os.Args) {
		return
	}
	p, err := defaultconfig.UserPaths()
	if err != nil {
		fmt.Fprintln(os.Stderr, "otelcol-dsh: no built-in configuration:", err)
		fmt.Fprintln(os.Stderr, "otelcol-dsh: pass one with --config=FILE")
		os.Exit(2)
	}
	if defaultconfig.Runs(os.Args) {
		if err := defaultconfig.Preflight(p.Listeners()); err != nil {
			fmt.Fprintln(os.Stderr, "otelcol-dsh:", err)
			os.Exit(1)
		}
	}
	os.Args = append(os.Args, defaultconfig.Flag(p))
}
