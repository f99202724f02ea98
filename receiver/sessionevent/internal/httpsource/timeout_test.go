package httpsource

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// TestDefaultReadTimeouts: the source's defaults bound the headers and the
// whole request, so a trickling client is cut off without configuration.
func TestDefaultReadTimeouts(t *testing.T) {
	cfg := NewDefaultConfig()
	assert.Equal(t, 10*time.Second, cfg.ServerConfig.ReadHeaderTimeout)
	assert.Equal(t, time.Minute, cfg.ServerConfig.ReadTimeout)
	require.NoError(t, cfg.Validate())
}

// TestTricklingClientsClosed: clients that send a valid row and then a
// byte every 200 ms are answered 408 at read_timeout and their
// connections closed, each giving back its share of max_bytes_in_flight;
// nothing of them is delivered. A client trickling its headers is closed
// at read_header_timeout without an answer.
func TestTricklingClientsClosed(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := startSource(t, sink, func(s *Source) {
		s.cfg.ServerConfig.ReadHeaderTimeout = 500 * time.Millisecond
		s.cfg.ServerConfig.ReadTimeout = time.Second
	})
	row := string(rowsOf(1))
	head := "POST /v1/sessions/trickle/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n"
	trickle := func(first, drip string) (status int, took time.Duration) {
		c, err := net.Dial("tcp", s.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		t0 := time.Now()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			if _, err := io.WriteString(c, first); err != nil {
				return
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				if _, err := io.WriteString(c, drip); err != nil {
					return
				}
			}
		})
		defer wg.Wait()
		defer close(stop)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		took = time.Since(t0)
		if err != nil {
			return 0, took // closed without an answer
		}
		res.Body.Close()
		return res.StatusCode, took
	}

	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			status, took := trickle(fmt.Sprintf("%sContent-Length: %d\r\n\r\n%s", head, len(row)+1000, row), "\n")
			assert.Equal(t, http.StatusRequestTimeout, status)
			assert.GreaterOrEqual(t, took, 900*time.Millisecond)
			assert.Less(t, took, 5*time.Second)
		})
	}
	wg.Go(func() {
		status, took := trickle(head, "X-Slow: 1\r\n")
		assert.Zero(t, status, "headers never finished: closed without an answer")
		assert.Less(t, took, 5*time.Second)
	})
	wg.Wait()
	assert.Zero(t, s.admission.inUse.Load(), "the cut requests gave their shares back")
	assert.Zero(t, sink.LogRecordCount())
}
