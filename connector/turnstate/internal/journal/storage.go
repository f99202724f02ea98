package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/storageclient"
)

// Storage is the journal on a storage extension (file_storage): one
// collector's sessions, read back whole at its next start.
type Storage struct {
	*ledger
}

var _ Journal = (*Storage)(nil)

// OpenStorage opens the connector's (self's) client on the storage
// extension id.
func OpenStorage(ctx context.Context, host component.Host, id, self component.ID, o Options) (*Storage, error) {
	client, err := storageclient.Open(ctx, host, id, component.KindConnector, self, "turns", metadata.Type.String())
	if err != nil {
		return nil, err
	}
	return NewStorage(client, o), nil
}

// NewStorage is the journal on a storage client.
func NewStorage(client storage.Client, o Options) *Storage {
	return &Storage{ledger: newLedger(clientStore{client}, true, o)}
}

// clientStore is a storage client as the journal's store: a write is done
// when Start returns.
type clientStore struct{ storage.Client }

func (s clientStore) Start(ctx context.Context, ops []*storage.Operation) (func() error, bool) {
	err := s.Batch(ctx, ops...)
	return func() error { return err }, false
}

// Load implements Journal: every session the bucket lists name. The values
// that cannot be read are deleted, so the next start does not meet them
// again.
func (s *Storage) Load(ctx context.Context) ([]Restored, error) {
	var ids []string
	var bad []damaged
	for b := range buckets {
		raw, err := s.store.Get(ctx, bucketKey(b))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", bucketKey(b), err)
		}
		if raw == nil {
			continue
		}
		var bucket []string
		if err := json.Unmarshal(raw, &bucket); err != nil {
			bad = append(bad, damaged{key: bucketKey(b), err: err})
			continue
		}
		ids = append(ids, bucket...)
	}
	rs, more, err := s.readAll(ctx, ids, false)
	if err != nil {
		return nil, err
	}
	bad = append(bad, more...)
	s.report(ctx, bad)
	if len(bad) > 0 {
		ops := make([]*storage.Operation, 0, len(bad))
		for _, d := range bad {
			ops = append(ops, storage.DeleteOperation(d.key))
		}
		if wait, _ := s.store.Start(ctx, ops); wait != nil {
			if err := wait(); err != nil {
				s.Logger.Warn("Could not delete the unreadable journal values", zap.Error(err))
			}
		}
	}
	return rs, nil
}

// Serial implements Journal: a storage journal needs nothing before a
// batch is decoded.
func (*Storage) Serial() bool { return false }

// BeforeBatch implements Journal: nothing to do.
func (*Storage) BeforeBatch(context.Context, plog.Logs, Peek) (Step, error) { return nil, nil }

// BeforeSweep implements Journal: nothing to do.
func (*Storage) BeforeSweep(context.Context, Peek) (SweepStep, error) { return nil, nil }

func asDamaged(err error, d **damaged) bool { return errors.As(err, d) }
