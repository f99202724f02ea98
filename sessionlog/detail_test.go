package sessionlog

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
)

// TestDetailTypes checks hasDetail against what decoding reads: a row of
// every known type, with a payload carrying every field some type's detail
// is read from, decodes to a non-empty Detail exactly when hasDetail says
// the type has one, and the shared noDetail stays empty.
func TestDetailTypes(t *testing.T) {
	const data = `{"turn":1,"step":1,"callId":"c1","name":"n","toolName":"n","arguments":"{}",` +
		`"role":"user","id":"m1","source":{"kind":"user"},"content":[{"type":"text","text":"x"}],` +
		`"message":{"role":"tool","id":"m2","callId":"c1","source":{"kind":"tool","callId":"c1"},"content":[{"type":"text","text":"x"}]},` +
		`"reason":{"kind":"completed"},"header":{"system":"s","config":{"provider":"p","model":"m"}},` +
		`"provider":"p","model":"m","subCallId":"s1","parentCallId":"c1","rootCallId":"r1","isError":true,` +
		`"error":{"code":"E"},"retry":2,"failure":{"code":"F","message":"f"},"inherited":true}`
	var types []string
	for typ := range knownTypes {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		d := NewRowDecoder(0, 0)
		d.SetFormat(Format{Version: 4})
		row, err := d.Decode(fmt.Appendf(nil, `{"type":%q,"seq":5,"time":1,"data":%s}`, typ, data), 1)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if len(row.Events) != 1 {
			continue // packed and header rows: no event of this shape
		}
		e := &row.Events[0]
		if e.Detail == nil {
			t.Errorf("%s: nil Detail", typ)
			continue
		}
		filled := !reflect.DeepEqual(*e.Detail, Detail{})
		if filled != hasDetail(typ) {
			t.Errorf("%s: Detail filled = %v, hasDetail = %v", typ, filled, hasDetail(typ))
		}
		if hasDetail(typ) == (e.Detail == noDetail) {
			t.Errorf("%s: hasDetail = %v but the Detail is the shared noDetail: %v", typ, hasDetail(typ), e.Detail == noDetail)
		}
	}
	if !reflect.DeepEqual(*noDetail, Detail{}) {
		t.Fatalf("noDetail was written to: %+v", *noDetail)
	}
}
