//go:build unix

package sessionevent

import (
	"io/fs"
	"strconv"
	"syscall"
)

// fileID identifies a file by device and inode.
func fileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(st.Ino, 10)
	}
	return ""
}
