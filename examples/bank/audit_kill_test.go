package main_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentcap/agentcap"
	"github.com/agentcap/agentcap/audit"
	"github.com/agentcap/agentcap/sqlstore"
)

// TestAuditSurvivesKill: the bank on its SQLite file answers verified
// executes from 16 goroutines, whose audit records share commits (group
// commit), and is killed with SIGKILL in their midst, as a crash would
// end it. Every call it answered has its audit record in the file.
func TestAuditSurvivesKill(t *testing.T) {
	bin := buildBank(t)
	db := filepath.Join(t.TempDir(), "bank.db")
	// Without rate limits, so that every call is one to record.
	p := startBankIn(t, bin, "", func(addr, url string) []string {
		return []string{"-addr", addr, "-issuer", url, "-db", db, "-limits", "off"}
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, _, _ := connectBalanceReader(ctx, t, p.url, p.logs.String)
	disc, err := a.Provider(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loc := disc.DefaultLocationURL()

	// call sends one execute with its own request id and reports whether
	// the bank answered it (200 with the balance).
	httpc := &http.Client{Timeout: 5 * time.Second}
	call := func(id string) bool {
		tok, err := a.SignJWT(loc, []string{"check_balance"})
		if err != nil {
			t.Error(err)
			return false
		}
		req, err := http.NewRequest(http.MethodPost, loc, strings.NewReader(`{"capability":"check_balance","arguments":{"account_id":"acc_123"}}`))
		if err != nil {
			t.Error(err)
			return false
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(agentcap.HeaderRequestID, id)
		resp, err := httpc.Do(req)
		if err != nil {
			return false // the bank is gone, or the answer did not arrive
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"balance"`)
	}

	const workers = 16
	var (
		mu       sync.Mutex
		answered []string
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("kill-%d-%d", w, i)
				if call(id) {
					mu.Lock()
					answered = append(answered, id)
					mu.Unlock()
				}
			}
		}()
	}
	// Kill the bank once it has answered a few hundred calls, while the
	// workers keep sending.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(answered)
		mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	close(stop)
	wg.Wait()
	if len(answered) < 300 {
		t.Fatalf("only %d calls answered before the kill\n%s", len(answered), p.logs)
	}

	store, err := sqlstore.OpenSQLite(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recorded := map[string]bool{}
	q := audit.Query{Capability: "check_balance", Limit: audit.MaxLimit}
	for {
		page, err := store.Audit().Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			recorded[r.RequestID] = true
		}
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	var missing []string
	for _, id := range answered {
		if !recorded[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d answered calls have no audit record after the kill, such as %v", len(missing), len(answered), missing[:min(5, len(missing))])
	}
	t.Logf("%d calls answered before SIGKILL, every one recorded (%d records of check_balance in the file)", len(answered), len(recorded))
}
