package dshencoding

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// magic begins every compact message. An OTLP protobuf message never
// begins with a zero byte (field number 0 does not exist), so a message
// without it is OTLP protobuf: what the encoding writes for logs it cannot
// carry compactly, and what a producer with encoding otlp_proto wrote.
const magic = "\x00dsh\x01"

// The kinds of an attribute value and of a body.
const (
	kindEmpty byte = iota
	kindStr
	kindInt
	kindBool
	kindDouble
)

var errUnsupported = errors.New("not carried compactly")

// marshal writes ld compactly, or as OTLP protobuf when it holds what the
// compact form does not carry (a value other than a string, int, bool or
// double, a body other than a string, dropped attribute counts).
func marshal(ld plog.Logs) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer e.reset()
	if err := e.logs(ld); err != nil {
		if errors.Is(err, errUnsupported) {
			return (&plog.ProtoMarshaler{}).MarshalLogs(ld)
		}
		return nil, err
	}
	return e.b, nil
}

// encoders are reused: their string index and key list outlive a message,
// the bytes written do not.
var encoders = sync.Pool{New: func() any { return &encoder{strs: map[string]uint64{}} }}

// encoder writes the compact form. Strings other than bodies are written
// once per message: their first use carries them, later ones their index.
type encoder struct {
	b    []byte
	strs map[string]uint64
	// same holds the strings written so far by where their bytes are: a
	// record's keys and most of its values are the very strings of the
	// record before (constants, the session's id), found here without
	// hashing them.
	same []indexed
	keys []string // of the map being written
}

type indexed struct {
	p *byte
	n int
	i uint64
}

func (e *encoder) reset() {
	e.b = nil
	clear(e.strs)
	clear(e.same[:cap(e.same)]) // no hold on the message's strings
	clear(e.keys[:cap(e.keys)])
	e.same, e.keys = e.same[:0], e.keys[:0]
	encoders.Put(e)
}

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

// str writes s by reference: 0 then the string, for its first use (it is
// given the next index), or 1 + its index.
func (e *encoder) str(s string) {
	p := unsafe.StringData(s)
	for _, c := range e.same {
		if c.p == p && c.n == len(s) {
			e.uvarint(c.i + 1)
			return
		}
	}
	i, ok := e.strs[s]
	if !ok {
		i = uint64(len(e.strs))
		e.strs[s] = i
		e.uvarint(0)
		e.raw(s)
	} else {
		e.uvarint(i + 1)
	}
	if len(e.same) < maxSame {
		e.same = append(e.same, indexed{p: p, n: len(s), i: i})
	}
}

// maxSame bounds the strings looked up by where their bytes are.
const maxSame = 32

func (e *encoder) raw(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) logs(ld plog.Logs) error {
	e.b = append(make([]byte, 0, sizeHint(ld)), magic...)
	rls := ld.ResourceLogs()
	e.uvarint(uint64(rls.Len()))
	for i := range rls.Len() {
		rl := rls.At(i)
		res := rl.Resource()
		if res.DroppedAttributesCount() != 0 {
			return errUnsupported
		}
		if err := e.attrs(res.Attributes()); err != nil {
			return err
		}
		e.str(rl.SchemaUrl())
		sls := rl.ScopeLogs()
		e.uvarint(uint64(sls.Len()))
		for j := range sls.Len() {
			sl := sls.At(j)
			sc := sl.Scope()
			if sc.DroppedAttributesCount() != 0 {
				return errUnsupported
			}
			e.str(sc.Name())
			e.str(sc.Version())
			if err := e.attrs(sc.Attributes()); err != nil {
				return err
			}
			e.str(sl.SchemaUrl())
			lrs := sl.LogRecords()
			e.uvarint(uint64(lrs.Len()))
			for k := range lrs.Len() {
				if err := e.record(lrs.At(k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (e *encoder) record(lr plog.LogRecord) error {
	if lr.DroppedAttributesCount() != 0 {
		return errUnsupported
	}
	e.uvarint(uint64(lr.Timestamp()))
	e.uvarint(uint64(lr.ObservedTimestamp()))
	e.uvarint(uint64(lr.SeverityNumber()))
	e.str(lr.SeverityText())
	e.str(lr.EventName())
	e.uvarint(uint64(lr.Flags()))
	tid, sid := lr.TraceID(), lr.SpanID()
	e.b = append(e.b, tid[:]...)
	e.b = append(e.b, sid[:]...)
	switch body := lr.Body(); body.Type() {
	case pcommon.ValueTypeEmpty:
		e.b = append(e.b, kindEmpty)
	case pcommon.ValueTypeStr:
		e.b = append(e.b, kindStr)
		e.raw(body.Str()) // a row: never repeated, not worth an index
	default:
		return errUnsupported
	}
	return e.attrs(lr.Attributes())
}

func (e *encoder) attrs(m pcommon.Map) error {
	e.uvarint(uint64(m.Len()))
	e.keys = e.keys[:0]
	for k, v := range m.All() {
		for _, seen := range e.keys {
			if seen == k { // a map read from elsewhere with a key twice: Put would fold it
				return errUnsupported
			}
		}
		e.keys = append(e.keys, k)
		e.str(k)
		switch v.Type() {
		case pcommon.ValueTypeStr:
			e.b = append(e.b, kindStr)
			e.str(v.Str())
		case pcommon.ValueTypeInt:
			e.b = append(e.b, kindInt)
			e.b = binary.AppendVarint(e.b, v.Int())
		case pcommon.ValueTypeBool:
			e.b = append(e.b, kindBool)
			if v.Bool() {
				e.b = append(e.b, 1)
			} else {
				e.b = append(e.b, 0)
			}
		case pcommon.ValueTypeDouble:
			e.b = append(e.b, kindDouble)
			e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v.Double()))
		default:
			return errUnsupported
		}
	}
	return nil
}

// sizeHint is about what the compact form of ld takes: its bodies and a
// record's other fields once their strings are indexed.
func sizeHint(ld plog.Logs) int {
	n := 256
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			lrs := sls.At(j).LogRecords()
			for k := range lrs.Len() {
				n += 96
				if body := lrs.At(k).Body(); body.Type() == pcommon.ValueTypeStr {
					n += len(body.Str())
				}
			}
		}
	}
	return n
}

// unmarshal reads a compact message, or an OTLP protobuf one.
func unmarshal(b []byte) (plog.Logs, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
	}
	d := decoder{b: b[len(magic):]}
	ld := plog.NewLogs()
	if err := d.logs(ld); err != nil {
		return plog.Logs{}, fmt.Errorf("dsh_encoding: %w", err)
	}
	return ld, nil
}

var errTruncated = errors.New("truncated or corrupt message")

// decoder reads the compact form; the first error sticks.
type decoder struct {
	b    []byte
	strs []string
	err  error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) byte() byte {
	b := d.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (d *decoder) raw() string { return string(d.bytes(d.uvarint())) }

func (d *decoder) str() string {
	i := d.uvarint()
	if d.err != nil {
		return ""
	}
	if i == 0 {
		s := d.raw()
		d.strs = append(d.strs, s)
		return s
	}
	if i-1 >= uint64(len(d.strs)) {
		d.err = errTruncated
		return ""
	}
	return d.strs[i-1]
}

// count reads a number of elements, each taking at least one byte.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return 0
	}
	return int(n)
}

func (d *decoder) logs(ld plog.Logs) error {
	rls := ld.ResourceLogs()
	n := d.count()
	rls.EnsureCapacity(n)
	for range n {
		rl := rls.AppendEmpty()
		d.attrs(rl.Resource().Attributes())
		rl.SetSchemaUrl(d.str())
		sls := rl.ScopeLogs()
		ns := d.count()
		sls.EnsureCapacity(ns)
		for range ns {
			sl := sls.AppendEmpty()
			sc := sl.Scope()
			sc.SetName(d.str())
			sc.SetVersion(d.str())
			d.attrs(sc.Attributes())
			sl.SetSchemaUrl(d.str())
			lrs := sl.LogRecords()
			nr := d.count()
			lrs.EnsureCapacity(nr)
			for range nr {
				d.record(lrs.AppendEmpty())
				if d.err != nil {
					return d.err
				}
			}
		}
		if d.err != nil {
			return d.err
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errTruncated
	}
	return d.err
}

func (d *decoder) record(lr plog.LogRecord) {
	lr.SetTimestamp(pcommon.Timestamp(d.uvarint()))
	lr.SetObservedTimestamp(pcommon.Timestamp(d.uvarint()))
	lr.SetSeverityNumber(plog.SeverityNumber(d.uvarint()))
	lr.SetSeverityText(d.str())
	lr.SetEventName(d.str())
	lr.SetFlags(plog.LogRecordFlags(d.uvarint()))
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	copy(tid[:], d.bytes(16))
	copy(sid[:], d.bytes(8))
	lr.SetTraceID(tid)
	lr.SetSpanID(sid)
	switch d.byte() {
	case kindEmpty:
	case kindStr:
		lr.Body().SetStr(d.raw())
	default:
		if d.err == nil {
			d.err = errTruncated
		}
	}
	d.attrs(lr.Attributes())
}

func (d *decoder) attrs(m pcommon.Map) {
	n := d.count()
	m.EnsureCapacity(n)
	for range n {
		k := d.str()
		switch d.byte() {
		case kindStr:
			m.PutStr(k, d.str())
		case kindInt:
			m.PutInt(k, d.varint())
		case kindBool:
			m.PutBool(k, d.byte() == 1)
		case kindDouble:
			b := d.bytes(8)
			if b != nil {
				m.PutDouble(k, math.Float64frombits(binary.LittleEndian.Uint64(b)))
			}
		default:
			if d.err == nil {
				d.err = errTruncated
			}
		}
		if d.err != nil {
			return
		}
	}
}
