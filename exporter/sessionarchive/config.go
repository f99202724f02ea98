package sessionarchive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/archive"
)

// Config is the session_archive exporter's configuration (docs/design.md §8).
type Config struct {
	exporterhelper.TimeoutConfig `mapstructure:",squash"`                                 // key: timeout
	QueueConfig                  configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig                  configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`

	// Root is the session root the archive is written under; created if
	// missing. A leading "~" is the home directory.
	Root string `mapstructure:"root"`
	// Fsync is when written rows are forced to stable storage: "none",
	// "batch" (every file a batch wrote, before the batch is acknowledged)
	// or "always" (every row on its own).
	Fsync string `mapstructure:"fsync"`
	// Compression is the files' encoding: "none" (session[.vN].jsonl) or
	// "zstd" (session[.vN].jsonl.zstd, dsh's frame layout).
	Compression string `mapstructure:"compression"`
	// MaxPendingRows bounds, per session file, the rows held while an
	// earlier seq or the header is awaited. Beyond it the archive gives up
	// on what is missing.
	MaxPendingRows int `mapstructure:"max_pending_rows"`
	// PendingTimeout is how long a missing seq or header is awaited.
	PendingTimeout time.Duration `mapstructure:"pending_timeout"`
	// MaxSessions bounds the sessions kept in memory; the least recently
	// used one is closed beyond it (its state is read back from its files
	// when it comes again).
	MaxSessions int `mapstructure:"max_sessions"`
	// MaxOpenFiles bounds the open file handles.
	MaxOpenFiles int `mapstructure:"max_open_files"`

	_ struct{}
}

// Accepted values.
const (
	FsyncNone   = "none"
	FsyncBatch  = "batch"
	FsyncAlways = "always"

	CompressionNone = "none"
	CompressionZstd = "zstd"
)

// Defaults.
const (
	defaultFsync          = FsyncBatch
	defaultCompression    = CompressionNone
	defaultMaxPendingRows = 4096
	defaultPendingTimeout = 30 * time.Second
	defaultMaxSessions    = 10000
	defaultMaxOpenFiles   = 256
)

var _ component.Config = (*Config)(nil)

// Validate checks the configuration; the embedded exporterhelper sections
// validate themselves.
func (c *Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.Root) == "" {
		errs = append(errs, errors.New("root must be set: the directory the sessions are archived under"))
	}
	switch c.Fsync {
	case FsyncNone, FsyncBatch, FsyncAlways:
	default:
		errs = append(errs, fmt.Errorf("fsync must be %q, %q or %q, got %q", FsyncNone, FsyncBatch, FsyncAlways, c.Fsync))
	}
	switch c.Compression {
	case CompressionNone, CompressionZstd:
	default:
		errs = append(errs, fmt.Errorf("compression must be %q or %q, got %q", CompressionNone, CompressionZstd, c.Compression))
	}
	if c.MaxPendingRows <= 0 {
		errs = append(errs, fmt.Errorf("max_pending_rows must be positive, got %d", c.MaxPendingRows))
	}
	if c.PendingTimeout <= 0 {
		errs = append(errs, fmt.Errorf("pending_timeout must be positive, got %s", c.PendingTimeout))
	}
	if c.MaxSessions <= 0 {
		errs = append(errs, fmt.Errorf("max_sessions must be positive, got %d", c.MaxSessions))
	}
	if c.MaxOpenFiles <= 0 {
		errs = append(errs, fmt.Errorf("max_open_files must be positive, got %d", c.MaxOpenFiles))
	}
	return errors.Join(errs...)
}

// rootDir is Root with a leading "~" expanded, made absolute.
func (c *Config) rootDir() (string, error) {
	root := c.Root
	if root == "~" || strings.HasPrefix(root, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("root %q: %w", c.Root, err)
		}
		root = home + root[1:]
	}
	return filepath.Abs(root)
}

func (c *Config) archiveOptions(root string) archive.Options {
	o := archive.Options{
		Root:           root,
		MaxPendingRows: c.MaxPendingRows,
		PendingTimeout: c.PendingTimeout,
		MaxSessions:    c.MaxSessions,
		MaxOpenFiles:   c.MaxOpenFiles,
	}
	switch c.Fsync {
	case FsyncNone:
		o.Fsync = archive.FsyncNone
	case FsyncAlways:
		o.Fsync = archive.FsyncAlways
	default:
		o.Fsync = archive.FsyncBatch
	}
	if c.Compression == CompressionZstd {
		o.Compression = archive.CompressionZstd
	}
	return o
}
