// Package storageclient opens a component's client on a storage extension
// named in its config (docs/design.md §9.1), with the errors a user needs
// when the name is wrong.
package storageclient

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// Open finds extension id among host's extensions and opens the client
// name of the component self (of kind) on it. Errors start with owner, the
// component type as its config names it.
func Open(ctx context.Context, host component.Host, id component.ID, kind component.Kind, self component.ID, name, owner string) (storage.Client, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("%s: storage extension %s not found", owner, id)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("%s: extension %s is not a storage extension", owner, id)
	}
	c, err := se.GetClient(ctx, kind, self, name)
	if err != nil {
		return nil, fmt.Errorf("%s: open storage %s: %w", owner, id, err)
	}
	return c, nil
}

// OpenOptional is Open for a setting that may name no extension: with a
// nil id the client is a nop one, which keeps nothing.
func OpenOptional(ctx context.Context, host component.Host, id *component.ID, kind component.Kind, self component.ID, name, owner string) (storage.Client, error) {
	if id == nil {
		return storage.NewNopClient(), nil
	}
	return Open(ctx, host, *id, kind, self, name, owner)
}
