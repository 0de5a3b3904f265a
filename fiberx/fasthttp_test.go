package fiberx_test

import "github.com/valyala/fasthttp"

// fasthttpCtx drives a Fiber handler without a network, for benchmarks.
type fasthttpCtx struct{ *fasthttp.RequestCtx }

func (c *fasthttpCtx) init(body []byte) {
	c.RequestCtx = &fasthttp.RequestCtx{}
	c.Request.Header.SetMethod("POST")
	c.Request.SetRequestURI("/agent/capability/execute")
	c.Request.Header.SetContentType("application/json")
	c.Request.SetBody(body)
}
