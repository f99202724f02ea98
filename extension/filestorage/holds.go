package filestorage

import (
	"go.opentelemetry.io/collector/component"
)

// The types of the dshtrace components whose files holds describes. Each
// component's metadata declares its type; they are repeated here because a
// storage extension sits below the components that store in it and imports
// none of them. TestComponentTypes checks that they are the components' own.
const (
	sessionEventType = "session_event"
	turnStateType    = "turn_state"
)

// held is what a storage file holds and what its component loses when a
// damaged copy is set aside.
type held struct {
	state, lost string
}

// holds says, for the files of dshtrace's components and of the
// collector's exporter queues, what they hold and what setting one aside
// costs (docs/operating.md, "Damaged state").
func holds(kind component.Kind, id component.ID, name string) held {
	switch {
	case kind == component.KindReceiver && id.Type().String() == sessionEventType && name == "files":
		return held{"the file tailer's checkpoints",
			"the tailed files are read again from their start; rows read before are delivered again (turn_state drops them as duplicates; other exporters of the logs pipeline receive them twice)"}
	case kind == component.KindReceiver && id.Type().String() == sessionEventType && name == "http":
		return held{"the HTTP source's deduplication state",
			"rows posted again are accepted again and delivered twice (turn_state drops them as duplicates; other exporters receive them twice)"}
	case kind == component.KindConnector && id.Type().String() == turnStateType:
		return held{"turn_state's journal of open turns",
			"turns open at the last stop are lost: their later events count as orphans (events_dropped{reason=\"orphan\"}) and their turn/end as a late close"}
	case kind == component.KindExporter:
		return held{"the exporter's persistent queue (" + name + ")",
			"requests queued at the last stop are lost; their count is unknown"}
	}
	return held{"the component's state", "the state it held is lost"}
}
