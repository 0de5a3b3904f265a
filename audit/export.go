package audit

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// Export writes the records matching q to w as JSON Lines (one Record
// object per line, newest first), following cursors until the last page
// or until max records were written (max <= 0: no bound). It returns how
// many records it wrote. q.Cursor may continue an earlier export.
func Export(ctx context.Context, s Store, q Query, w io.Writer, max int) (int, error) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if q.Limit == 0 {
		q.Limit = MaxLimit
	}
	n := 0
	for {
		page, err := s.Query(ctx, q)
		if err != nil {
			return n, err
		}
		for _, r := range page.Records {
			if max > 0 && n == max {
				return n, nil
			}
			if err := enc.Encode(r); err != nil {
				return n, err
			}
			n++
		}
		if page.NextCursor == "" {
			return n, nil
		}
		q.Cursor = page.NextCursor
	}
}

// Retention deletes records older than keep from s every interval until
// ctx ends, calling report (when set) after each sweep. It sweeps once
// at once. Run it in a goroutine of its own.
func Retention(ctx context.Context, s Store, keep, interval time.Duration, report func(deleted int64, err error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := s.Sweep(ctx, time.Now().Add(-keep))
		if report != nil && ctx.Err() == nil {
			report(n, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
