// Package issues is the capability set shared by the framework examples: a
// tiny issue tracker with workspaces, members and issues, exposed to agents
// as create_issue, list_issues and watch_issues (an event stream).
//
// The point it demonstrates is the context function: the caller's bearer
// token only says who the user is (Verifier makes that the identity's
// UserID). Whether that user belongs to the workspace named in the
// arguments, and with which role, is re-read from the store on every
// call; nothing the caller sends about roles is trusted.
package issues

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/auth"
	"github.com/agentcap/agentcap/core"
	"github.com/agentcap/agentcap/httpx"
)

// Roles a member can hold.
const (
	RoleOwner  = "owner"
	RoleMember = "member"
	RoleViewer = "viewer"
)

// Issue is one tracked issue.
type Issue struct {
	ID          string `json:"id"`
	WorkspaceID string `json:"workspace_id"`
	Title       string `json:"title"`
	Body        string `json:"body,omitempty"`
	Author      string `json:"author"`
}

// Store is an in-memory store of workspaces, memberships and issues.
type Store struct {
	mu      sync.Mutex
	members map[string]map[string]string // workspace -> user -> role
	issues  map[string][]Issue
	next    int
	// watchers are the open watch_issues calls, by workspace.
	watchers map[chan Issue]string
}

// NewStore returns a store seeded with the demo data: workspace "acme"
// (alice owner, bob viewer) and workspace "globex" (bob owner).
func NewStore() *Store {
	return &Store{
		members: map[string]map[string]string{
			"acme":   {"alice": RoleOwner, "bob": RoleViewer},
			"globex": {"bob": RoleOwner},
		},
		issues: map[string][]Issue{},
	}
}

// Role returns the user's role in the workspace, or "" for a non-member.
func (s *Store) Role(workspace, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members[workspace][user]
}

// Create stores a new issue and returns it.
func (s *Store) Create(workspace, author, title, body string) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	is := Issue{ID: fmt.Sprintf("ISS-%d", s.next), WorkspaceID: workspace, Title: title, Body: body, Author: author}
	s.issues[workspace] = append(s.issues[workspace], is)
	s.publish(is)
	return is
}

// List returns the workspace's issues, oldest first.
func (s *Store) List(workspace string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Issue{}, s.issues[workspace]...)
}

// App is the application context of one call, built by the context
// function from the store.
type App struct {
	User      string
	Workspace string
	Role      string
	Store     *Store
}

// Codes of the tracker's own refusals, both answered 403 like the kit's
// unauthorized.
var (
	// CodeNotAMember refuses a user who is not a member of the workspace.
	CodeNotAMember = agentcap.NewCode("not_a_member", agentcap.CodeUnauthorized)
	// CodeReadOnlyMember refuses a viewer who tries to change something.
	CodeReadOnlyMember = agentcap.NewCode("read_only_member", agentcap.CodeUnauthorized)
)

// CreateIssueInput is the input of create_issue.
type CreateIssueInput struct {
	WorkspaceID string `json:"workspace_id" minLength:"1"`
	Title       string `json:"title" minLength:"1" maxLength:"200"`
	Body        string `json:"body,omitempty" maxLength:"10000"`
}

// ListIssuesInput is the input of list_issues.
type ListIssuesInput struct {
	WorkspaceID string `json:"workspace_id" minLength:"1"`
}

// IssueList is the output of list_issues.
type IssueList struct {
	Issues []Issue `json:"issues"`
}

// CreateIssue is the create_issue capability.
var CreateIssue = core.MustDefine("create_issue", "Create an issue in a workspace the user belongs to",
	func(_ context.Context, app App, in CreateIssueInput) (Issue, error) {
		if app.Role == RoleViewer {
			return Issue{}, agentcap.NewError(CodeReadOnlyMember, "viewers cannot create issues")
		}
		return app.Store.Create(app.Workspace, app.User, in.Title, in.Body), nil
	},
	core.WithRisk(core.RiskMedium), core.WithRequiredConstraints("workspace_id"), core.WithTags("issues"))

// ListIssues is the list_issues capability.
var ListIssues = core.MustDefine("list_issues", "List the issues of a workspace the user belongs to",
	func(_ context.Context, app App, _ ListIssuesInput) (IssueList, error) {
		return IssueList{Issues: app.Store.List(app.Workspace)}, nil
	}, core.WithTags("issues"))

// Registry holds the capabilities.
var Registry = core.MustRegistry(CreateIssue, ListIssues, WatchIssues)

// workspaceOf reads the workspace from a validated input.
func workspaceOf(input any) string {
	switch in := input.(type) {
	case CreateIssueInput:
		return in.WorkspaceID
	case ListIssuesInput:
		return in.WorkspaceID
	case WatchIssuesInput:
		return in.WorkspaceID
	}
	return ""
}

// NewExecutor returns an executor whose context function re-reads the
// user's membership from store on every call.
func NewExecutor(store *Store) (*core.Executor, error) {
	return core.NewExecutor(Registry, func(_ context.Context, id *auth.Identity, _ *core.Definition, input any) (App, error) {
		if id == nil {
			return App{}, core.ErrForbidden // an in-process call for nobody
		}
		ws := workspaceOf(input)
		role := store.Role(ws, id.UserID)
		if role == "" {
			return App{}, agentcap.NewError(CodeNotAMember, "the user is not a member of this workspace")
		}
		return App{User: id.UserID, Workspace: ws, Role: role, Store: store}, nil
	}, core.Config{Timeout: 10 * time.Second})
}

// demoTokens maps the demo bearer tokens to users.
var demoTokens = map[string]string{
	"alice-token": "alice",
	"bob-token":   "bob",
}

// Verifier maps demo bearer tokens such as "alice-token" to the identity
// of their user. A real application verifies a signed token instead (see
// auth/oidcauth).
type Verifier struct{}

// errBadToken refuses a bearer token that names no user.
var errBadToken = agentcap.NewError(agentcap.CodeInvalidJWT, "the credentials are invalid")

// Verify implements auth.Verifier.
func (Verifier) Verify(_ context.Context, req *auth.Request) (*auth.Identity, error) {
	tok, ok := auth.BearerToken(req.Authorization)
	if !ok {
		return nil, auth.ErrNoCredentials
	}
	user, ok := demoTokens[tok]
	if !ok {
		return nil, errBadToken
	}
	return &auth.Identity{Subject: user, UserID: user}, nil
}

// Challenge implements auth.Challenger: the WWW-Authenticate value of
// every 401 answer.
func (Verifier) Challenge() string { return `Bearer realm="issues"` }

// NewHandler returns the HTTP surface of the example over a fresh store.
func NewHandler() (*httpx.Handler, error) {
	exec, err := NewExecutor(NewStore())
	if err != nil {
		return nil, err
	}
	return httpx.New(exec, httpx.Config{Verifier: Verifier{}})
}
