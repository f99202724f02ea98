// Package sessionarchive is the session_archive exporter (docs/design.md §8): it
// writes the session rows that reach it as log records (the session_event
// receiver's contract, docs/design.md §3) into a dsh session root — each session
// at --<project-key>--/<escaped-session-id>/session[.vN].jsonl[.zstd],
// header first, rows in seq order, exactly the bytes received, each row
// once across re-deliveries and restarts. The archive is itself a session
// root that dshtrace check, the turn engine and the session_event file
// tailer read back.
//
// The writing logic lives in internal/archive and imports no collector
// package; this package adapts it to exporterhelper.
package sessionarchive
