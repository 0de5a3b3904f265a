package jsoncanon

import "testing"

// golden holds the canonical forms and digests of texts, valid and not,
// as the canonical form was first written: confirmation tokens and
// idempotency keys bind to these bytes, so they may never change.
var golden = []struct {
	in, out string
	ok      bool
	digest  string
}{
	{"{\"b\":1,\"a\":[1,2.0,{\"z\":null,\"y\":\"\\u00e9\"}]}", "{\"a\":[1,2,{\"y\":\"é\",\"z\":null}],\"b\":1}", true, "c9dad5b6d97afe79dcd8dba9af250e59d0ed910ef37bbde620e1ccd002f16244"},
	{" [ ] ", "[]", true, "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"},
	{"{\"a\\\"b\":\"x\\ny\"}", "{\"a\\\"b\":\"x\\ny\"}", true, "d346a00a4b425c5ce1e4027f5b8acc708870679c7efa0abc611b163fef5f5119"},
	{"1e400", "1e400", true, "f2bba4568fecd4b9729970732e571ac9373a33fb2d6a960794a41f0f2ecdbc25"},
	{"-0.0", "-0", true, "ed79f26d03f412bde3db206601a698e0bb451bea9e3cc25289636ac17ea74b0a"},
	{"{\"\\u0062\":1,\"a\":\"\\ud83d\\ude00\"}", "{\"a\":\"😀\",\"b\":1}", true, "7420f5ec13c783627ecbf4ea80e7aef3024b13cda65a5fd42d31e3ea916a3e56"},
	{"{\"k\":\"\\ud800\"}", "{\"k\":\"�\"}", true, "010e27f385a539343dbc224f65c9653044f8731d74235a83f9ffbcd199bfbf39"},
	{"{\"\\udc00x\":1,\"\\ud800\":2}", "{\"�\":2,\"�x\":1}", true, "b8535fe30c2b1b5fb2018be64fe992f9c3b05fb1b256513dbc09c108d51b369c"},
	{"\"\\ud800\\u0041\"", "\"�A\"", true, "5784393b360946b77e2cbba68f459d1dbc1d9d3d18b26f31d6f0bf629776a610"},
	{"\"\xff\\n\"", "\"�\\n\"", true, "1141dd586999309f20adfb4eaf4d479ede59769179892a2117bb633154862702"},
	{"{\"\\u00e9\xff\":\"\xed\xa0\x80\\t\"}", "{\"é�\":\"���\\t\"}", true, "8ca22111fc08ce208876d7859fa60db553e7357565d72d1bc6e4f0192273bc88"},
	{"\"\\u0000\\u001f\\u007f\\u2028\"", "\"\\u0000\\u001f\x7f\u2028\"", true, "20851995dd6ca90762717f1cf45797b21a509550af75e2aeb9247ec8190b22a1"},
	{"\"\\/\\b\\f\"", "\"/\\u0008\\u000c\"", true, "c89e980b1936acb1eb14b792e1cd371297c4271248900cd585f55fa037bfcd48"},
	{"{\"a\":\"\\x\"}", "{\"a\":", false, "60faa182952d91e2eea6ae68ac58e0e95f75e8d1787cbdcc2f7a8302e44e013a"},
	{"\"\\u12\"", "", false, "3c5af18ebdd731acb1dd570e44e06a69af50ede5a14615a9b2246a2faee5d833"},
	{"\"\\u12g4\"", "", false, "addc537e40f678930372c0f8ee55c935f2f2225e76a8515de9b48764a5ff383e"},
	{"\"a\x01\\n\"", "", false, "e002d3278a7b637d405b4d609cce6ef20e8c171d26e97093d50a57dbd37e3afe"},
	{"{\"k\":1,\"k\":2}", "{\"k\":1,\"k\":2}", true, "1f141a1609a3da9afe5447fbb7d47bedde94ed6ecb754e98b480f102215ed97c"},
	{"[1.,01,+1,.5]", "[1,1,1,0.5]", true, "24060a31f5d389cb18c1f8a4cc983fed7f4e7373449468c33258fc6c6687eae2"},
	{"{\"a\":", "", false, "ceca713566291d2116e53da1555793c6a65c3633941bb56de2f8a2f0f0e9e158"},
	{"[1,]", "[1,", false, "a08cea5e9c95924dbded4535db6a6b9aff9cae1de2684c9bd3748f4126735cdf"},
	{"\"\\ud800\\ud800\\udc00\"", "\"�𐀀\"", true, "c5c5fd9ae9bb791d2e24e94c0f4104882e44d3694fc17c8ef815cf6f94fe676a"},
	{"{\"amount\":125.50,\"memo\":\"r\\u00e9nt\",\"to\":\"DE89\"}", "{\"amount\":125.5,\"memo\":\"rént\",\"to\":\"DE89\"}", true, "4e492fc8c2d21b3b5b80e9c50494cd7de0ac964fa5d5891692b475d481c6dfbe"},
}

func TestGolden(t *testing.T) {
	for _, g := range golden {
		out, ok := Append(nil, []byte(g.in))
		if string(out) != g.out || ok != g.ok {
			t.Errorf("Append(%q) = %q, %v; want %q, %v", g.in, out, ok, g.out, g.ok)
		}
		if d := Digest([]byte(g.in)); d != g.digest {
			t.Errorf("Digest(%q) = %s, want %s", g.in, d, g.digest)
		}
	}
}
