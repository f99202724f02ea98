// Package filestorage is otelcol-dsh's file_storage extension: the
// collector-contrib file storage (one bbolt file per component and
// purpose, same configuration, same files), with a rule for damaged
// files. A file that cannot be opened because it is damaged — truncated,
// overwritten, not a database — is set aside under a new name
// (<file>.damaged-<time>) and a fresh one is started, with one error line
// naming both files and what the component loses with it; the collector
// starts. A file the collector may not open (its permissions) is not
// touched: the component refuses to start with one line naming the file
// and the fix. docs/operating.md, "Damaged state", lists what each
// component's file holds.
package filestorage
