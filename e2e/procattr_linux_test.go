//go:build e2e && linux

package e2e

import "syscall"

// procAttr puts a child in its own process group and has the kernel kill it
// when the test binary dies, so that no backend outlives a crashed run.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
