package filestorage

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dshtrace/dshtrace/connector/turnstate"
	"github.com/dshtrace/dshtrace/receiver/sessionevent"
)

// TestComponentTypes: the types holds names are the ones the components
// declare, so a renamed component cannot lose its entry unnoticed.
func TestComponentTypes(t *testing.T) {
	assert.Equal(t, sessionevent.NewFactory().Type().String(), sessionEventType)
	assert.Equal(t, turnstate.NewFactory().Type().String(), turnStateType)
}
