package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentcap/agentcap/agentauth/ratelimit"
)

func ExampleMemory() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	l := ratelimit.NewMemory(0).WithClock(func() time.Time { return now })
	key := ratelimit.Key(ratelimit.DimAgent, "agt_k7x9m2")
	for range 3 {
		d, _ := l.Allow(context.Background(), key, ratelimit.PerMinute(2))
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// true 1 0s
	// true 0 0s
	// false 0 30s
}

func ExampleAllowAll() {
	l := ratelimit.NewMemory(0)
	d, err := ratelimit.AllowAll(context.Background(), l,
		ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimAgent, "agt_1"), Limit: ratelimit.PerMinute(60)},
		ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimHost, "hst_1"), Limit: ratelimit.PerMinute(300)},
		ratelimit.Rule{Key: ratelimit.Key(ratelimit.DimCapability, "transfer_money"), Limit: ratelimit.PerHour(10)},
	)
	fmt.Println(d.Allowed, d.Remaining, err)
	// Output: true 9 <nil>
}

func ExampleKey() {
	fmt.Println(ratelimit.Key(ratelimit.DimAgent, "agt_1"))
	fmt.Println(ratelimit.Key(ratelimit.DimCapability, "transfer_money", "usr:alice"))
	// Output:
	// agent:agt_1
	// capability:transfer_money:usr%3Aalice
}

func ExampleIPKey() {
	for _, addr := range []string{"192.0.2.7:51234", "[2001:db8:1:2::99]:443"} {
		k, _ := ratelimit.IPKey(addr)
		fmt.Println(k)
	}
	// Output:
	// ip:192.0.2.7
	// ip:2001%3Adb8%3A1%3A2%3A%3A/64
}

func ExampleError() {
	d := ratelimit.Decision{RetryAfter: 29500 * time.Millisecond}
	e := ratelimit.Error(d, "Agent agt_1 exceeded 60 requests/minute")
	fmt.Println(e.HTTPStatus(), e.Code, e.Fields[ratelimit.RetryAfterField])
	// Output: 429 rate_limited 30
}
