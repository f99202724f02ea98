package metadata

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Attribute keys of the receiver's own metrics (metadata.yaml: attributes).
const (
	AttributeTransport = "transport"
	AttributeReason    = "reason"
)

// Values of the transport attribute: the receiver's two sources. obsreport
// (receiverhelper) is given the same names.
const (
	TransportHTTP = "http"
	TransportFile = "file"
)

// TransportTelemetry records the receiver's own counters for one transport:
// every point it records carries transport=<its transport>.
type TransportTelemetry struct {
	t         *Telemetry
	transport string
	attrs     metric.MeasurementOption
}

// ForTransport returns the recording handle of one transport (TransportHTTP
// or TransportFile).
func (t *Telemetry) ForTransport(transport string) *TransportTelemetry {
	return &TransportTelemetry{
		t: t, transport: transport,
		attrs: metric.WithAttributes(attribute.String(AttributeTransport, transport)),
	}
}

// RowsAccepted counts n rows turned into records and delivered.
func (tt *TransportTelemetry) RowsAccepted(ctx context.Context, n int64) {
	tt.t.RowsAccepted.Add(ctx, n, tt.attrs)
}

// RowsDuplicate counts n rows acknowledged as already delivered.
func (tt *TransportTelemetry) RowsDuplicate(ctx context.Context, n int64) {
	tt.t.RowsDuplicate.Add(ctx, n, tt.attrs)
}

// RowsRejected counts n rows refused or skipped for reason (a lower-case
// violation code or one of the reasons metadata.yaml lists).
func (tt *TransportTelemetry) RowsRejected(ctx context.Context, n int64, reason string) {
	tt.t.RowsRejected.Add(ctx, n, metric.WithAttributes(
		attribute.String(AttributeTransport, tt.transport), attribute.String(AttributeReason, reason)))
}

// StateWritesWatched makes the transport's failed-write counter exist at
// zero, so that an alert on it has a series to watch.
func (tt *TransportTelemetry) StateWritesWatched(ctx context.Context) {
	tt.t.StateWriteFailures.Add(ctx, 0, tt.attrs)
}

// StateWriteFailed counts one failed write of the transport's state.
func (tt *TransportTelemetry) StateWriteFailed(ctx context.Context) {
	tt.t.StateWriteFailures.Add(ctx, 1, tt.attrs)
}

// BytesRead counts n input bytes read.
func (tt *TransportTelemetry) BytesRead(ctx context.Context, n int64) {
	tt.t.BytesRead.Add(ctx, n, tt.attrs)
}
