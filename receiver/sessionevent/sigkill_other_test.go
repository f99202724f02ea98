//go:build !unix

package sessionevent

const childEnv = "SESSIONEVENT_SIGKILL_CHILD"

func runChild() int { return 0 }
