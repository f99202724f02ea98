// Package sessionroot is dsh's on-disk layout (docs/format.md §2): how a
// session root names its project and session directories and each format
// generation's file, which generation a reader follows, how a .zstd file
// is cut into frames, and where a file's complete content ends while dsh
// may still be appending to it.
//
// It is the one home of that layout: the receiver's file transport, the
// session_archive exporter, the codec's compression sniffing and the CLI
// all use it. It imports nothing of the rest of the module.
package sessionroot
