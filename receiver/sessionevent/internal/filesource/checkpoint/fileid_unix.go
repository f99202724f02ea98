//go:build unix

package checkpoint

import (
	"io/fs"
	"strconv"
	"syscall"
)

// FileID identifies a file by device and inode.
func FileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(st.Ino, 10)
	}
	return ""
}
