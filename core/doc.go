// Package core defines capabilities, the narrow application actions a Go
// service exposes to authenticated AI agents, and runs them.
//
// A capability is another entry point into an ordinary use case. It is
// defined once with [Define] from a typed handler; the JSON Schemas of its
// input and output are derived from the Go types at that moment. A
// [Registry] holds definitions. An [Executor] runs them through a fixed
// pipeline whose stages are named in every error, hook event and span:
//
//	lookup -> input -> authorize -> context -> handler -> output
//
// Input is decoded strictly and once: unknown keys, duplicate keys and
// keys that differ from a field name only by letter case are rejected, and
// every schema violation is reported with a JSON Pointer. The value that an
// authorize callback approved is the value the context resolver and the
// handler receive. The context resolver (ExecutorConfig.CreateContext) is
// the security boundary: it turns a verified principal into the
// application's own authorization state and never trusts roles or tenants
// the caller sent. Output is validated before it reaches any transport.
//
// Errors are safe by default. Every failure is an [*Error] with a stable
// [Code], its [Stage], a public message and a hidden cause. Only an
// [*AppError] carries an application's own words to a caller; plain errors
// and panics are redacted. The one table from code to HTTP status and to
// the Agent Auth wire code lives here ([HTTPStatus], [WireCode]) so every
// transport agrees.
//
// # Constraints and units
//
// An identity layer such as agentauth grants a capability with
// constraints on its top-level input fields ("destination_account is
// acc_456", "amount at most 500"), which a person approves as they read
// them. A numeric bound means nothing without its unit: "amount at most
// 500" lets 500 GBP through, some 635 USD, when the caller picks the
// currency and the handler converts. A capability whose numbers carry a
// unit must make the unit part of what is granted: name the field that
// holds it with [WithUnit] (a grant that bounds amount must then
// constrain currency too, and approval pages show "at most 500 USD"), or
// fix the unit in the use case itself (the amount is always in the
// source account's currency) and say so in the description.
// [WithRequiredConstraints] names the fields every grant must constrain.
//
// # Long-running calls
//
// Three pieces let transports serve calls that outlive one quick answer,
// without any transport in core: [DefineStream] gives a handler an
// [Emitter] of typed, validated chunks, which reach whatever sink the
// transport installed with [WithStream] (httpx: server-sent events; an
// MCP server: progress notifications, say); [WithAsync] marks capabilities
// whose calls run as jobs (package jobs keeps them; httpx answers 202 and
// serves polling); [OnHandlerStart] tells a transport the moment a call
// has passed validation, authorization and context construction, so
// that it can still answer a refusal directly and only then commit to a
// stream or a job. [ReportProgress] reaches the transport's listener
// ([WithProgress]) in both cases. Batches refuse streaming and async
// capabilities per item with CodeBatchUnsupported; the executor's default
// timeout does not apply to them (the transport bounds streams, the job
// runner jobs).
//
// Package core imports no web framework and no authentication library.
// Transports live in httpx (and the ginx, echox, fiberx mounts); Agent Auth
// lives in agentauth.
package core
