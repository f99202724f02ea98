package sessionlog

// Resume puts a fresh Validator where one that had checked a session up to
// seq next-1 would stand between turns: the next event is expected at seq
// next and the next turn/start at lastTurn+1 (lastTurn 0: no turn yet).
// A pipeline that restores a session from persisted state calls it before
// feeding the rest, so the rows it no longer has (the turns closed before
// the restart) are not reported as a gap, a non-zero first seq or a
// skipped turn. The surface before next is unknown, so surface tracking
// is off from here on (replace ranges are not checked).
func (v *Validator) Resume(next, lastTurn int64) {
	v.started = next > 0
	v.lastSeq = next - 1
	v.joinedAt = 0
	v.resync = false
	v.openTurn, v.openStep, v.nextStep = 0, 0, 1
	v.nextTurn = lastTurn + 1
	v.turnSeen = lastTurn > 0
	v.advertised, v.gaps = v.advertised[:0], v.gaps[:0]
	v.pending.Reset()
	v.surface, v.noSurface = v.surface[:0], true
}

// LastTurn is the number of the latest turn the validator saw end (0:
// none): what Resume takes to continue after it.
func (v *Validator) LastTurn() int64 { return v.nextTurn - 1 }
