// Package issues is the capability set shared by the framework examples: a
// tiny issue tracker with workspaces, members and issues, exposed to agents
// as create_issue, list_issues and watch_issues (an event stream).
//
// The point it demonstrates is the context resolver: the caller's bearer
// token only says who the user is. Whether that user belongs to the
// workspace named in the arguments, and with which role, is re-read from
// the store on every call; nothing the caller sends about roles is
// trusted.
package issues

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

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

// User is the verified principal: who the bearer token belongs to.
type User struct{ ID string }

// App is the application context of one call, built by the resolver
// from the store.
type App struct {
	User      string
	Workspace string
	Role      string
	Store     *Store
}

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
			return Issue{}, core.Forbidden("read_only_member", "viewers cannot create issues")
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

// NewExecutor returns an executor whose context resolver re-reads the
// user's membership from store on every call.
func NewExecutor(store *Store) (*core.Executor[App, User], error) {
	return core.NewExecutor(Registry, core.ExecutorConfig[App, User]{
		CreateContext: func(_ context.Context, u User, _ *core.Definition, input any) (App, error) {
			ws := workspaceOf(input)
			role := store.Role(ws, u.ID)
			if role == "" {
				return App{}, core.Forbidden("not_a_member", "the user is not a member of this workspace")
			}
			return App{User: u.ID, Workspace: ws, Role: role, Store: store}, nil
		},
		Timeout: 10 * time.Second,
	})
}

// demoTokens maps the demo bearer tokens to users.
var demoTokens = map[string]string{
	"alice-token": "alice",
	"bob-token":   "bob",
}

// Authenticate maps demo bearer tokens such as "alice-token" to users. A
// real application verifies a signed token instead (see httpx/oidcauth).
func Authenticate(_ context.Context, req *httpx.Request) (User, error) {
	h := req.Header("Authorization")
	if h == "" {
		return User{}, httpx.ErrNoCredentials
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return User{}, httpx.ErrNoCredentials
	}
	id, ok := demoTokens[tok]
	if !ok {
		return User{}, httpx.ErrBadCredentials
	}
	return User{ID: id}, nil
}

// NewHandler returns the HTTP surface of the example over a fresh store.
func NewHandler() (*httpx.Handler[App, User], error) {
	exec, err := NewExecutor(NewStore())
	if err != nil {
		return nil, err
	}
	return httpx.New(exec, httpx.Config[User]{
		Authenticate: Authenticate,
		Challenge:    `Bearer realm="issues"`,
	})
}
