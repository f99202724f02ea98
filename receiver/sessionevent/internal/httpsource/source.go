package httpsource

import (
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"

	"github.com/dshtrace/dshtrace/internal/episode"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource/dedup"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Source is the HTTP transport: a confighttp server whose requests are
// judged whole (body.go), deduplicated against what was accepted before
// (dedup), turned into records and delivered to next in one call each.
type Source struct {
	cfg     Config
	maxLine int
	set     receiver.Settings
	next    consumer.Logs
	obs     *receiverhelper.ObsReport
	tel     *metadata.TransportTelemetry
	now     func() time.Time

	dedup *dedup.Store
	// trackerMu guards tracker. It is taken after a request's stripe locks
	// and the dedup store's mutex, never before them.
	trackerMu sync.Mutex
	tracker   *logrecord.Tracker

	// unsaved are the sessions whose accepted rows were delivered but whose
	// state could not be stored: their requests are answered 503 until a
	// write lands (guarded by unsavedMu; also under the stripe locks).
	unsavedMu sync.Mutex
	unsaved   map[*dedup.Session]struct{}
	// storing is the dedup state's writes failing, refusing the pipeline
	// refusing the rows: each logged once as it begins and ends.
	storing, refusing *episode.Episode

	srv     *http.Server
	addr    net.Addr
	maxBody int64
	// admission bounds the body bytes read at once (admission.go), made
	// by Start; origins refuses web pages of other origins (origin.go).
	admission *admission
	origins   originCheck
	client    storage.Client
	wg        sync.WaitGroup
}

// New returns the HTTP source of the receiver set describes: its section
// of the configuration (its storage resolved), the longest row accepted,
// the bounds its records are placed within (their MaxSessions also bounds
// the deduplication state), the next consumer, and the obsreport and
// counters of its transport.
func New(cfg Config, maxLine int, bounds turnmodel.Bounds, set receiver.Settings, next consumer.Logs, obs *receiverhelper.ObsReport, tel *metadata.TransportTelemetry) *Source {
	bounds = bounds.WithDefaults()
	return &Source{
		cfg: cfg, maxLine: maxLine, set: set, next: next, obs: obs, tel: tel, now: time.Now,
		dedup:   dedup.NewStore(bounds.MaxSessions, set.Logger),
		tracker: logrecord.NewTracker(bounds),
		unsaved: map[*dedup.Session]struct{}{},
		storing: episode.New(set.Logger,
			"Cannot store the HTTP deduplication state: requests are answered 503 with Retry-After until it can be stored (an accepted row is a stored row)",
			"The HTTP deduplication state is stored again"),
		refusing: episode.New(set.Logger,
			"The pipeline refuses posted session rows: requests are answered 503 with Retry-After until it accepts them",
			"The pipeline accepts posted session rows again"),
	}
}

// DedupSessions is the dedup_sessions gauge: the sessions whose accepted
// seqs are remembered (0 without an HTTP source).
func (h *Source) DedupSessions() int64 {
	if h == nil {
		return 0
	}
	return h.dedup.Len()
}

// Addr is the address served on, once started.
func (h *Source) Addr() net.Addr { return h.addr }
