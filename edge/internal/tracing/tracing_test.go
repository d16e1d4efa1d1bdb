package tracing

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
)

// A collector that is not there costs the spans, and at shutdown no more than one export's
// timeout: the pod's grace period is not spent waiting for it.
func TestCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now

	tp, err := Start(context.Background(), endpoint, 1)
	if err != nil {
		t.Fatalf("Start must not need the collector: %v", err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "request")
	span.End()
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reported := make(chan error, 10)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { reported <- err }))
	tp.Shutdown(ctx)
	select {
	case <-reported: // the edge binary logs these
	default:
		t.Error("no error reported for spans sent to a collector that is not there")
	}
	if took := time.Since(began); took > 3*exportTimeout {
		t.Errorf("Shutdown took %s with the collector down, want about exportTimeout (%s)", took, exportTimeout)
	}
}
