// Package dshencoding is the dsh_encoding extension: a logs encoding for
// the kafka exporter and receiver (`encoding: dsh_encoding`) that carries
// the session_event receiver's records compactly and losslessly. A
// record's strings other than its body — attribute keys, the session id,
// event types, event and severity names, the scope — are written once per
// message and referred to after; the body (the row) as it is; timestamps
// and ids as they are. Reading a message back gives the same records,
// attributes in the same order, as OTLP protobuf would: the record
// contract (docs/design.md §3) holds on the far side of Kafka.
//
// Logs the compact form cannot carry (a value other than a string, int,
// bool or double, a body other than a string, a dropped-attribute count,
// a map holding a key twice) are written as OTLP protobuf, and a message
// that does not begin with the compact form's magic bytes is read as OTLP
// protobuf: a consumer with dsh_encoding reads what a producer with
// otlp_proto wrote, so the consuming tier is switched first.
package dshencoding
