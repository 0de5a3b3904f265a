package bank

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/agentcap/agentcap/agentauth"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// User is the bank's principal: the user an agent acts for. ID is empty
// for an agent without a user.
type User struct {
	ID string
}

// Caller is the principal of the bank's executor.
type Caller = agentauth.Caller[User]

// Executor runs the bank's capabilities.
type Executor = core.Executor[*App, Caller]

// App is the application context of one call: the user and their
// accounts, as the bank's own store says, never as the caller says.
type App struct {
	// User is the id of the user the call acts for; empty for capabilities
	// that act for no one (exchange_rate called by an autonomous agent).
	User string
	// Accounts are the user's accounts, read when the call began.
	Accounts []Account

	store Ledger
}

// Owns reports whether the user owns account id.
func (a *App) Owns(id string) bool {
	return slices.ContainsFunc(a.Accounts, func(acc Account) bool { return acc.ID == id })
}

// UserOf returns the user a session acts for: the agent's user, else its
// host's. An autonomous agent acts for no user, whatever its host is
// linked to.
func UserOf(s *agentauth.Session) string {
	if s == nil || s.Agent == nil || s.Agent.Mode == agentauth.ModeAutonomous {
		return ""
	}
	if s.Agent.UserID != "" {
		return s.Agent.UserID
	}
	if s.Host != nil {
		return s.Host.UserID
	}
	return ""
}

// Principal maps a verified session to the bank's principal.
func Principal(_ context.Context, s *agentauth.Session) (User, error) {
	return User{ID: UserOf(s)}, nil
}

func actsForUserDef(def *core.Definition) bool {
	return slices.Contains(def.Tags(), TagActsForUser)
}

func noUser() *core.AppError {
	return core.NewAppError(http.StatusForbidden, agentauth.CodeUnauthorized,
		"this capability acts for a user, and the agent acts for none")
}

// Authorize refuses a capability that acts for a user to an agent that
// has none. It runs before the agent's grants are checked: no grant can
// give an autonomous agent a user's accounts.
func Authorize(_ context.Context, c Caller, inv *core.Invocation) error {
	if actsForUserDef(inv.Definition) && UserOf(c.Session) == "" {
		return noUser()
	}
	return nil
}

// HostPrincipal maps the verified host of a host JWT caller of list and
// describe to the bank's principal: the host's linked user, whose
// capabilities it may see before it has an agent (protocol §5.2).
func HostPrincipal(_ context.Context, h *agentauth.Host) (User, error) {
	return User{ID: h.UserID}, nil
}

// HTTPOptions returns the bank's Agent Auth wiring: its principal (for
// agents and for hosts listing capabilities), its authorizer, and
// anonymous discovery of public capabilities. The caller adds the
// session source, the host source, the issuer and a logger.
func HTTPOptions() agentauth.HTTPOptions[User] {
	return agentauth.HTTPOptions[User]{
		Principal:               Principal,
		HostPrincipal:           HostPrincipal,
		Authorize:               Authorize,
		AllowAnonymousDiscovery: true,
	}
}

// Public reports whether def is one of the bank's public capabilities:
// it acts for no user and needs no approval (approval strength none).
// exchange_rate is one.
func Public(def *core.Definition) bool {
	return def.Approval() == core.ApprovalNone && !actsForUserDef(def)
}

// GrantLifetimes are the bank's grant lifetimes (provider.GrantTTLs): a
// grant of transfer_money lasts a day from its approval, after which the
// agent asks again; the other grants last as long as their agent.
var GrantLifetimes = map[string]time.Duration{"transfer_money": 24 * time.Hour}

// GrantAutonomous is the bank's provider policy for autonomous agents
// (provider.Policy.GrantAutonomous): an autonomous agent that asks for a
// public capability gets it without a user, since anybody may use it;
// every other capability acts for a user, which an autonomous agent has
// not, and is denied.
func GrantAutonomous(_ context.Context, _ *store.Host, def *core.Definition) bool {
	return Public(def)
}

// Resolver builds the application context of a call. It works from the
// verified session only: the user is the session's user, and that user's
// accounts are read again from the store.
func Resolver(store Ledger) func(ctx context.Context, c Caller, def *core.Definition, _ any) (*App, error) {
	return func(ctx context.Context, c Caller, def *core.Definition, _ any) (*App, error) {
		app := &App{store: store}
		if !actsForUserDef(def) {
			return app, nil
		}
		app.User = UserOf(c.Session)
		if app.User == "" {
			return nil, noUser()
		}
		accounts, err := store.AccountsOf(ctx, app.User)
		if err != nil {
			return nil, ledgerUnavailable(fmt.Errorf("bank: loading the accounts of %s: %w", app.User, err))
		}
		app.Accounts = accounts
		return app, nil
	}
}

// Options configures NewExecutor. Its zero value serves one instance.
type Options struct {
	// Confirmer issues and consumes the tokens that confirm transfers.
	// Nil means a confirm.Manager over memory, which serves one
	// instance; several share one over a common store.
	Confirmer core.Confirmer
	// Location is the bank's capability location, which confirmation
	// tokens are bound to.
	Location string
	// Hooks observe every execution and preview.
	Hooks []core.Hook
	// Audit, when set, keeps a record of every execution, preview and
	// confirmation.
	Audit audit.Sink
	// Human asks the account's owner to confirm transfers above
	// HumanThreshold (provider.Provider.HumanConfirmer). Nil: such
	// transfers are refused with 403 unauthorized, since nobody can be
	// asked.
	Human core.HumanConfirmer
	// Registry is the registry of the bank's capabilities, as NewRegistry
	// makes it, when the provider was given it first; nil makes one.
	Registry *core.Registry
}

// NewRegistry returns a registry of the bank's capabilities.
func NewRegistry() (*core.Registry, error) {
	return core.NewRegistry(Capabilities()...)
}

// NewExecutor returns an executor of the bank's capabilities over store.
// Every transfer must be confirmed with a token bound to the agent that
// asked and to the exact call; one that debits more than HumanThreshold
// from its source account, by the account's owner (Options.Human).
func NewExecutor(store Ledger, o Options) (*Executor, error) {
	reg := o.Registry
	var err error
	if reg == nil {
		if reg, err = NewRegistry(); err != nil {
			return nil, err
		}
	}
	if o.Confirmer == nil {
		if o.Confirmer, err = confirm.New(confirm.Config{}); err != nil {
			return nil, err
		}
	}
	var trail core.AuditConfig[Caller]
	if o.Audit != nil {
		trail.Writer = audit.ForExecutor(o.Audit)
	}
	return core.NewExecutor(reg, core.ExecutorConfig[*App, Caller]{
		CreateContext: Resolver(store),
		Hooks:         o.Hooks,
		Audit:         trail,
		Confirmation: core.ConfirmationConfig[Caller]{
			Confirmer: o.Confirmer,
			Subject:   AgentID,
			Audience:  o.Location,
			Human:     o.Human,
		},
	})
}

// AgentID names the agent behind a call, "" for none: the subject that
// confirmation tokens are bound to.
func AgentID(c Caller) string {
	if c.Session == nil || c.Session.Agent == nil {
		return ""
	}
	return c.Session.Agent.ID
}

// ExecutionLog returns a hook that logs one line per execution, and per
// preview: the agent, the capability, the outcome ("completed" or the
// error code) and the duration. Arguments and results are never logged.
func ExecutionLog(logger *slog.Logger) core.Hook {
	return func(ctx context.Context, ev core.Event) error {
		var outcome string
		switch ev.Phase {
		case core.PhaseEnd:
			outcome = "completed"
		case core.PhaseError:
			outcome = ev.Err.WireCode()
		default:
			return nil
		}
		agent := ""
		if c, ok := ev.Principal.(Caller); ok {
			agent = AgentID(c)
		}
		msg := "execution"
		if ev.Preview {
			msg = "preview"
		}
		logger.LogAttrs(ctx, slog.LevelInfo, msg,
			slog.String("agent", agent),
			slog.String("capability", ev.Capability),
			slog.String("outcome", outcome),
			slog.Duration("duration", ev.Duration))
		return nil
	}
}
