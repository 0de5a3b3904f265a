package attempt

import (
	"strings"
	"sync"
	"testing"
)

func TestNewUnique(t *testing.T) {
	const workers, each = 8, 1000
	names := make(chan string, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				names <- New()
			}
		})
	}
	wg.Wait()
	close(names)
	seen := make(map[string]bool, workers*each)
	for n := range names {
		if seen[n] {
			t.Fatalf("%q returned twice", n)
		}
		if !strings.HasPrefix(n, prefix) {
			t.Fatalf("%q does not start with the process's prefix %q", n, prefix)
		}
		seen[n] = true
	}
	if len(prefix) != 17 {
		t.Errorf("prefix %q: want 16 characters of 96 random bits and a dot", prefix)
	}
}
