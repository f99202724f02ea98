// Package sessionlog reads DeepSeek Harness (dsh) session logs: every
// dialect (the seed dialect, format versions 0–4, zstd files, the live
// transports' line wrappers), keeping each physical row's bytes beside a
// typed view of its events. It validates the format's invariants and
// derives the model-visible history. It imports no collector package, so
// the CLI, the collector components and the benchmarks share it.
//
// The usual loop:
//
//	dec, err := sessionlog.NewDecoder(r, sessionlog.Options{})
//	v := sessionlog.NewValidator()
//	for {
//		row, err := dec.Next()
//		if err == io.EOF { break }
//		if err != nil { return err } // unreadable: I/O, corrupt zstd, unsupported version
//		for _, viol := range v.Row(row, dec.Format()) { … }
//		for i := range row.Events { e := &row.Events[i]; … }
//	}
//
// Comments cite sections of docs/format.md, the repository's format reference.
package sessionlog
