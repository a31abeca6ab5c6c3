package contentlog

// WithFaults makes Open's segment files fail as fault says (Options.Fault).
func WithFaults(opts Options, fault func(op string) error) Options {
	opts.Fault = fault
	return opts
}

// HeaderSize is the size of a record's header, for tests that damage one.
const HeaderSize = headerSize
