// Package codec holds the codec benchmark of bench/codec.sh: sessionlog's
// Decoder + Validator, the encoding/json map[string]any baseline and the
// parse floor (general-purpose JSON parsers that only parse), all over the
// same rows in one test binary so that they see the same machine state.
//
// It is a module of its own so that the floor parsers never enter the
// dshtrace module's dependencies; `go test ./...` at the repository root
// does not descend into it.
package codec
