package contentlog

import "time"

// WithFaults makes Open's segment files fail as fault says (Options.Fault).
func WithFaults(opts Options, fault func(op string) error) Options {
	opts.Fault = fault
	return opts
}

// HeaderSize is the size of a record's header, for tests that damage one.
const HeaderSize = headerSize

// WaitPrepared waits for the preparation of a spare segment, if one runs.
// No append may run meanwhile.
func WaitPrepared(l *Log) { l.prepDone.Wait() }

// SpareName and PrepareName are the files of the spare segment, ready and
// being prepared.
const (
	SpareName   = spareName
	PrepareName = prepareName
)

// SetClock makes l's pacing of preparations (spare.go) read now.
func SetClock(l *Log, now func() time.Time) { l.pace.now = now }
