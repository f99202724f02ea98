//go:build e2e && !linux && !windows

package e2e

import "syscall"

// procAttr puts a child in its own process group (stop kills the group).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
