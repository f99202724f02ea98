package defaultconfig

import (
	"errors"
	"syscall"
)

// WSAEADDRINUSE: Windows reports a taken port with its own code.
const wsaeaddrinuse = syscall.Errno(10048)

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, wsaeaddrinuse)
}
