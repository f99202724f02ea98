package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// rootLayout is what serve looks for under a root.
const rootLayout = "ROOT/<project>/<session>/session[.vN].jsonl[.zstd]"

// describeRoot says, for a root that holds no session, what serve looked
// for and what it found instead; "" when the root holds a session.
func describeRoot(root string) string {
	if list, err := sessionroot.List(root); err != nil || len(list) > 0 {
		return "" // an unreadable root was refused before
	}
	entries, _ := os.ReadDir(root)
	var logs, dirs []string
	for _, e := range entries {
		switch {
		case e.Type().IsRegular() && isLogName(e.Name()):
			logs = append(logs, e.Name())
		case e.IsDir():
			dirs = append(dirs, e.Name())
		}
	}
	head := fmt.Sprintf("%s holds no session (looked for %s)", root, rootLayout)
	switch {
	case len(logs) > 0 && hasGeneration(logs):
		return fmt.Sprintf("%s; it is a session directory: serve %s, or replay the file with dshtrace replay",
			head, filepath.Dir(filepath.Dir(filepath.Clean(root))))
	case sessionsDirectlyUnder(root, dirs):
		return fmt.Sprintf("%s; it is a project directory (sessions right under it): serve its parent, %s",
			head, filepath.Dir(filepath.Clean(root)))
	case len(logs) > 0:
		return fmt.Sprintf("%s; found instead %s (%s): dshtrace replay FILE shows one",
			head, plural(len(logs), "loose session log"), strings.Join(first(logs, 3), ", "))
	case len(entries) == 0:
		return head + "; it is empty"
	}
	what := fmt.Sprintf("%d entries", len(entries))
	if len(entries) == 1 {
		what = "1 entry"
	}
	return fmt.Sprintf("%s; found %s, none a project directory of sessions", head, what)
}

// isLogName is a file name a session log may have.
func isLogName(name string) bool {
	return strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zstd")
}

// hasGeneration reports whether a name is a session generation file.
func hasGeneration(names []string) bool {
	for _, n := range names {
		if _, _, ok := sessionroot.ParseFileName(n); ok {
			return true
		}
	}
	return false
}

// sessionsDirectlyUnder reports whether a directory of dirs holds a
// generation file itself: root is a project directory.
func sessionsDirectlyUnder(root string, dirs []string) bool {
	for _, d := range dirs {
		entries, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if _, _, ok := sessionroot.ParseFileName(e.Name()); ok && e.Type().IsRegular() {
				return true
			}
		}
	}
	return false
}

// first is at most n of names, with "…" when there are more.
func first(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(names[:n:n], "…")
}
