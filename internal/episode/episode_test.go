package episode

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestOneLineEachWay(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	e := New(zap.New(core), "storage refuses", "storage accepts again")
	now := time.Unix(0, 0)
	e.clock = func() time.Time { return now }
	e.Clear() // nothing under way: nothing said
	assert.False(t, e.Active())

	var wg sync.WaitGroup
	began := make(chan bool, 100)
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began <- e.Strike(errors.New("no space left on device"), zap.String("file", "x"))
		}()
	}
	wg.Wait()
	close(began)
	n := 0
	for b := range began {
		if b {
			n++
		}
	}
	assert.Equal(t, 1, n, "one strike begins the episode")
	assert.True(t, e.Active())
	now = now.Add(15 * time.Second)
	e.Clear()
	e.Clear()
	assert.False(t, e.Active())

	all := logs.All()
	if assert.Len(t, all, 2) {
		assert.Equal(t, zapcore.ErrorLevel, all[0].Level)
		assert.Equal(t, "storage refuses", all[0].Message)
		assert.Equal(t, "no space left on device", all[0].ContextMap()["error"])
		assert.Equal(t, "storage accepts again", all[1].Message)
		assert.EqualValues(t, 100, all[1].ContextMap()["strikes"])
		assert.Equal(t, 15*time.Second, all[1].ContextMap()["lasted"])
	}

	// A new episode begins anew.
	assert.True(t, e.Strike(errors.New("again")))
	assert.Len(t, logs.All(), 3)
}
