package pgstore_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/agentcap/agentcap/agentauth/store"
	"github.com/agentcap/agentcap/agentauth/store/pgstore"
)

// A provider opens the store once at boot and sweeps it periodically.
func ExampleOpen() {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	policy := store.Policy{SessionTTL: time.Hour, MaxLifetime: 24 * time.Hour, AbsoluteLifetime: 30 * 24 * time.Hour, PendingTTL: 24 * time.Hour}
	for range time.Tick(time.Minute) {
		if _, err := s.Sweep(ctx, time.Now(), policy); err != nil {
			log.Print(err)
		}
	}
}
