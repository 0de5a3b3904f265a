package core

// WithTitle sets a short, human-readable title for the capability, which
// transports that show capabilities to people (MCP clients, say) display
// instead of the name.
func WithTitle(title string) Option { return func(o *options) { o.title = title } }

// WithReadOnly declares that the capability only reads: it changes nothing
// in the application or elsewhere. Transports pass it on as a hint (MCP's
// readOnlyHint) for capabilities of low risk; it is a promise of the
// capability's author, not something the executor can check.
func WithReadOnly() Option { return func(o *options) { o.readOnly = true } }

// Title returns the title set with WithTitle, or "".
func (d *Definition) Title() string { return d.title }

// ReadOnly reports whether the capability declared itself read-only with
// WithReadOnly.
func (d *Definition) ReadOnly() bool { return d.readOnly }
