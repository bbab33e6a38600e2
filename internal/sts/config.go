package sts

import (
	"time"

	"github.com/sts-operator/sts-operator/internal/sts/store"
	"github.com/sts-operator/sts-operator/internal/sts/webui"
)

// Config is the table server's configuration. Start from DefaultConfig: the zero value of the
// boolean fields is not the original's default.
type Config struct {
	// Port is the port the server listens on; CONFIG prints it.
	Port int
	// DatasetDir is where INITFILE reads and SAVE writes files (the original's datasetDirectory).
	DatasetDir string
	// ReservedName is a name in DatasetDir that INITFILE and SAVE refuse ("" for none): that of
	// the state directory, when it lies there, so that no client can read or write the journal.
	ReservedName string
	// AddTimestamp is SAVE's default for ADD_TIMESTAMP.
	AddTimestamp bool
	// CharsetRead, CharsetWrite and CharsetResponse name the charsets of files read (INITFILE,
	// LOAD), files written (SAVE, EXPORT) and answers. Empty means UTF-8.
	CharsetRead, CharsetWrite, CharsetResponse string
	// InitFiles is the original's initFileAtStartup: a comma-separated list of files in
	// DatasetDir, or with InitFilesRegex a regular expression that file names must fully match.
	InitFiles string
	// InitFilesRegex makes InitFiles a regular expression.
	InitFilesRegex bool
	// Loads are files at any path, each loaded at startup under its own list name.
	Loads []Load
	// LoadDirs are directories whose matching files are loaded at startup, each under its file
	// name.
	LoadDirs []LoadDir
	// AllowStop lets /sts/STOP stop the server; when false STOP answers a KO.
	AllowStop bool
	// LoadAndRunOnStartup is the original's jmeterPlugin.sts.loadAndRunOnStartup property, which
	// only its JMeter startup scripts act on: CONFIG shows it, nothing else reads it.
	LoadAndRunOnStartup bool
	// AuthToken, when not empty, is the bearer token every /sts request must carry, in an
	// "Authorization: Bearer" header or a TOKEN parameter.
	AuthToken string
	// MaxBodyBytes limits request bodies; a larger one is answered with HTTP 413.
	MaxBodyBytes int64
	// MinFreeBytes is the free space SAVE leaves in the dataset directory's file system: a SAVE
	// that would leave less is refused (HTTP 507), so that a client cannot fill the volume the
	// journal writes to. Zero turns the check off.
	MinFreeBytes int64
	// Limits are the store's (the store enforces them); the server also refuses an INITFILE or
	// startup file larger than Limits.MaxTotalBytes before reading it.
	Limits store.Limits
	// MaxNameBytes is the longest FILENAME (a list name) a command accepts, in bytes; a longer
	// one is refused before the command runs. Zero is no limit.
	MaxNameBytes int64
	// MaxWait caps the WAIT of a blocking read: a longer one waits MaxWait. Zero turns waiting
	// off (WAIT is then still checked, but never waits).
	MaxWait time.Duration
	// MaxLease is the longest lease a read may take (LEASE) or an EXTEND may give (LEASE_MS).
	MaxLease time.Duration
	// MaxDeliveries, when positive, sends a leased line to the list's dead letters (<list>.dead)
	// instead of back to the list once it has gone back that many times; MaxDeliveriesByList
	// overrides it for the lists it names, and a read's MAX_DELIVERIES both. Zero: never.
	MaxDeliveries       int
	MaxDeliveriesByList map[string]int
	// RequestIDWindow is how long the answer of a request with a REQUEST_ID is kept, during
	// which a retry with the same id is given that answer instead of running again.
	RequestIDWindow time.Duration
	// WaitForStartup refuses commands (HTTP 503) until LoadAtStartup has run: set it when the
	// store is restored (from a journal) while the server already listens, so that no client
	// sees a list before its state is back.
	WaitForStartup bool
	// MetricsAuth makes /metrics ask for the AuthToken like the commands; health endpoints
	// never do.
	MetricsAuth bool
	// NoWebUI turns the web page at /ui/ off (its paths are then unknown commands).
	NoWebUI bool
	// PageInterval is how often the web page samples the lists while someone watches (1 s when
	// zero); tests shorten it.
	PageInterval time.Duration
	// PageMaxStreams and PageMaxStreamsPerSession bound the web page's live streams, in all and
	// per browser session (zero: no limit); PageStreamWriteTimeout drops a stream whose browser
	// has not read for that long.
	PageMaxStreams, PageMaxStreamsPerSession int
	PageStreamWriteTimeout                   time.Duration
	// Durability says what a change survives, for the web page's facts ("none" when empty).
	Durability string
	// MetricsMaxLists is the most lists that get a series of their own in sts_list_lines.
	MetricsMaxLists int
	// RegexTimeout bounds the regular-expression matches of one FIND all together (so a scan
	// holds its list's lock that long at most), and those of one startup directory listing.
	RegexTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout and IdleTimeout drop clients that send their request head,
	// their whole request, or their next keep-alive request too slowly.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
}

// Load is a file loaded at startup into a list.
type Load struct {
	List string // list name, the FILENAME clients use
	Path string // file path, absolute or relative to the working directory
}

// LoadDir is a directory of files loaded at startup, each regular file directly in Dir whose
// name fully matches the regular expression Match being loaded under its file name.
type LoadDir struct {
	Dir   string
	Match string
}

// Defaults of the settings that the original does not have.
const (
	DefaultPort         = 9191
	DefaultMaxBodyBytes = 16 << 20
	// DefaultMinFreeBytes is the journal's default --snapshot-bytes: room for a whole segment
	// before the snapshot that deletes it, on a volume the journal may share with the dataset.
	DefaultMinFreeBytes = 64 << 20
	DefaultMaxWait      = time.Minute
	DefaultMaxLease     = time.Hour
	// DefaultRequestIDWindow outlasts the retries of an injector (a few, seconds apart) with
	// room to spare, and keeps the answers of 5 minutes of requests at most.
	DefaultRequestIDWindow = 5 * time.Minute
	DefaultMetricsMaxLists = 100
	// DefaultMaxNameBytes and DefaultMaxLists bound STATUS, whose answer lists every list: about
	// 10 MiB at most with both.
	DefaultMaxNameBytes      = 1024
	DefaultMaxLists          = 10000
	DefaultRegexTimeout      = time.Second
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 2 * time.Minute
	// DefaultIdleTimeout is well above the 4.9 s after which JMeter revalidates an idle
	// keep-alive connection, so that JMeter never sends on a connection we are closing.
	DefaultIdleTimeout = time.Minute
	// MaxHeaderBytes is the largest request head accepted, from the request line to the empty
	// line that ends the headers, both included; a larger one gets HTTP 431.
	MaxHeaderBytes = 64 << 10
)

// DefaultPageMaxStreams is a team's browsers with room to spare; each stream costs a goroutine
// and up to 128 KiB of socket buffer. DefaultPageMaxStreamsPerSession is a browser's tabs of the
// overview.
const (
	DefaultPageMaxStreams           = 64
	DefaultPageMaxStreamsPerSession = 8
)

// DefaultConfig returns the original's defaults plus ours.
func DefaultConfig() Config {
	return Config{
		Port:              DefaultPort,
		DatasetDir:        ".",
		AddTimestamp:      true,
		CharsetRead:       "UTF-8",
		CharsetWrite:      "UTF-8",
		CharsetResponse:   "UTF-8",
		AllowStop:         true,
		MaxBodyBytes:      DefaultMaxBodyBytes,
		MinFreeBytes:      DefaultMinFreeBytes,
		Limits:            store.Limits{MaxLists: DefaultMaxLists},
		MaxNameBytes:      DefaultMaxNameBytes,
		MaxWait:           DefaultMaxWait,
		MaxLease:          DefaultMaxLease,
		RequestIDWindow:   DefaultRequestIDWindow,
		MetricsMaxLists:   DefaultMetricsMaxLists,
		RegexTimeout:      DefaultRegexTimeout,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		IdleTimeout:       DefaultIdleTimeout,

		PageMaxStreams:           DefaultPageMaxStreams,
		PageMaxStreamsPerSession: DefaultPageMaxStreamsPerSession,
		PageStreamWriteTimeout:   webui.DefaultStreamWriteTimeout,
	}
}

// withDefaults fills the fields whose zero value means "not set".
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	fill := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	fill(&c.DatasetDir, d.DatasetDir)
	fill(&c.CharsetRead, d.CharsetRead)
	fill(&c.CharsetWrite, d.CharsetWrite)
	fill(&c.CharsetResponse, d.CharsetResponse)
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	for _, dur := range []struct{ v, def *time.Duration }{
		{&c.RegexTimeout, &d.RegexTimeout},
		{&c.MaxLease, &d.MaxLease},
		{&c.RequestIDWindow, &d.RequestIDWindow},
		{&c.ReadHeaderTimeout, &d.ReadHeaderTimeout},
		{&c.ReadTimeout, &d.ReadTimeout},
		{&c.IdleTimeout, &d.IdleTimeout},
		{&c.PageStreamWriteTimeout, &d.PageStreamWriteTimeout},
	} {
		if *dur.v <= 0 {
			*dur.v = *dur.def
		}
	}
	return c
}
