package bank

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/confirm"
	"github.com/agentcap/agentcap/core"
)

// App is the application context of one call: the user and their
// accounts, as the bank's own store says, never as the caller says.
type App struct {
	// User is the id of the user the call acts for; empty for capabilities
	// that act for no one (exchange_rate called by an autonomous agent).
	User string

	store Ledger
	// accounts are the user's accounts once read (loaded).
	accounts []Account
	loaded   bool
}

// Accounts returns the user's accounts, read from the store once per
// call (by the context function, for every capability but
// check_balance). A store that cannot be read gives the answer the call
// then gets.
func (a *App) Accounts(ctx context.Context) ([]Account, error) {
	if !a.loaded {
		accounts, err := a.store.AccountsOf(ctx, a.User)
		if err != nil {
			return nil, ledgerUnavailable(fmt.Errorf("bank: loading the accounts of %s: %w", a.User, err))
		}
		a.accounts, a.loaded = accounts, true
	}
	return a.accounts, nil
}

// account returns the user's account id, if the user owns it.
func (a *App) account(ctx context.Context, id string) (acc Account, owned bool, err error) {
	accounts, err := a.Accounts(ctx)
	if err != nil {
		return Account{}, false, err
	}
	i := slices.IndexFunc(accounts, func(acc Account) bool { return acc.ID == id })
	if i < 0 {
		return Account{}, false, nil
	}
	return accounts[i], true, nil
}

// Owns reports whether the user owns account id.
func (a *App) Owns(ctx context.Context, id string) (bool, error) {
	_, owned, err := a.account(ctx, id)
	return owned, err
}

// userOf is the user a caller acts for: for an Agent Auth agent the
// agent's user, else its host's, and none for an autonomous agent
// (agentauth.ActsFor); for a host listing capabilities with a host JWT,
// the user the host is linked to. The verifier put it in the identity.
func userOf(id *auth.Identity) string {
	if id == nil {
		return ""
	}
	return id.UserID
}

// actsForUser reports whether a capability acts for a user.
func actsForUser(def *core.Definition) bool {
	return slices.Contains(def.Tags(), TagActsForUser)
}

// actsForUserNames are the bank's capabilities that act for a user, by
// name, for Authorize, which sees a call's name only.
var actsForUserNames = func() map[string]bool {
	names := map[string]bool{}
	for _, c := range Capabilities() {
		if def := c.Definition(); actsForUser(def) {
			names[def.Name()] = true
		}
	}
	return names
}()

func noUser() *agentcap.Error {
	return agentcap.NewError(agentcap.CodeUnauthorized,
		"this capability acts for a user, and the agent acts for none")
}

// Authorize refuses a capability that acts for a user to an agent that
// has none. It is the Authorize of the bank's Agent Auth wiring
// (agentauth.Config and provider.Config), which runs it before the
// agent's grants are checked: no grant can give an autonomous agent a
// user's accounts.
func Authorize(_ context.Context, id *auth.Identity, call *auth.Call) error {
	if actsForUserNames[call.Capability] && userOf(id) == "" {
		return noUser()
	}
	return nil
}

// Public reports whether def is one of the bank's public capabilities:
// it acts for no user and needs no approval (approval strength none).
// exchange_rate is one.
func Public(def *core.Definition) bool {
	return def.Approval() == core.ApprovalNone && !actsForUser(def)
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

// Resolver returns the bank's context function over store, which builds
// the application context of a call. It works from the verified identity
// only: the user is the one the identity acts for, and that user's
// accounts are read again from the store (App.Accounts), by every call
// but check_balance's, whose ledger read checks the account's owner.
func Resolver(store Ledger) func(ctx context.Context, id *auth.Identity, def *core.Definition, _ any) (*App, error) {
	return func(ctx context.Context, id *auth.Identity, def *core.Definition, _ any) (*App, error) {
		app := &App{store: store}
		if !actsForUser(def) {
			return app, nil
		}
		app.User = userOf(id)
		if app.User == "" {
			return nil, noUser()
		}
		if !ownerCheckedByLedger[def.Name()] {
			// Read here, so that a ledger that cannot be read refuses
			// the call before its input is looked at or its job made.
			if _, err := app.Accounts(ctx); err != nil {
				return nil, err
			}
		}
		return app, nil
	}
}

// ownerCheckedByLedger are the capabilities that read one account,
// whose ledger read checks the account's owner: their calls read no
// list of the user's accounts.
var ownerCheckedByLedger = map[string]bool{CheckBalance.Definition().Name(): true}

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
func NewExecutor(store Ledger, o Options) (*core.Executor, error) {
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
	var trail core.AuditConfig
	if o.Audit != nil {
		trail.Writer = audit.ForExecutor(o.Audit)
	}
	// Confirmation tokens are bound to the identity's subject: the agent
	// that asked.
	return core.NewExecutor(reg, Resolver(store), core.Config{
		Hooks: o.Hooks,
		Audit: trail,
		Confirmation: core.ConfirmationConfig{
			Confirmer: o.Confirmer,
			Audience:  o.Location,
			Human:     o.Human,
		},
	})
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
			outcome = string(ev.Err.Code)
		default:
			return nil
		}
		agent := ""
		if ev.Identity != nil {
			agent = ev.Identity.AgentID
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
