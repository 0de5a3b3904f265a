package issues

import (
	"context"
	"time"

	"github.com/agentcap/agentcap/core"
)

// WatchIssuesInput is the input of watch_issues.
type WatchIssuesInput struct {
	WorkspaceID string `json:"workspace_id" minLength:"1"`
	Seconds     int    `json:"seconds,omitempty" minimum:"1" maximum:"60" description:"How long to watch; 5 when absent."`
}

// IssueEvent is one chunk of watch_issues: an issue that existed when the
// watch began ("existing") or was created while it ran ("created").
type IssueEvent struct {
	Type  string `json:"type" enum:"existing,created"`
	Issue Issue  `json:"issue"`
}

// WatchSummary is the final result of watch_issues.
type WatchSummary struct {
	Events int `json:"events"`
}

// WatchIssues streams a workspace's issues: those that exist, then each
// new one as it is created, for a few seconds.
var WatchIssues = core.MustDefineStream("watch_issues",
	"Stream the issues of a workspace the user belongs to: the existing ones, then each new one as it is created, for a few seconds",
	func(ctx context.Context, app App, in WatchIssuesInput, emit *core.Emitter[IssueEvent]) (WatchSummary, error) {
		d := time.Duration(in.Seconds) * time.Second
		if d == 0 {
			d = 5 * time.Second
		}
		created, stop := app.Store.watch(app.Workspace)
		defer stop()
		n := 0
		for _, is := range app.Store.List(app.Workspace) {
			if err := emit.Emit(IssueEvent{Type: "existing", Issue: is}); err != nil {
				return WatchSummary{}, err
			}
			n++
		}
		end := time.NewTimer(d)
		defer end.Stop()
		for {
			select {
			case <-ctx.Done():
				return WatchSummary{}, ctx.Err()
			case <-end.C:
				return WatchSummary{Events: n}, nil
			case is := <-created:
				if err := emit.Emit(IssueEvent{Type: "created", Issue: is}); err != nil {
					return WatchSummary{}, err
				}
				n++
			}
		}
	}, core.WithTags("issues"))

// watch returns the issues created in workspace from now on, until stop
// is called. A watcher that falls behind by more than a few issues misses
// the ones in between rather than slowing down Create.
func (s *Store) watch(workspace string) (<-chan Issue, func()) {
	ch := make(chan Issue, 16)
	s.mu.Lock()
	if s.watchers == nil {
		s.watchers = map[chan Issue]string{}
	}
	s.watchers[ch] = workspace
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.watchers, ch)
		s.mu.Unlock()
	}
}

// publish tells the watchers of is's workspace. The store's lock is held.
func (s *Store) publish(is Issue) {
	for ch, ws := range s.watchers {
		if ws == is.WorkspaceID {
			select {
			case ch <- is:
			default:
			}
		}
	}
}
