import assert from "node:assert/strict";
import { freshNodeKey } from "../../testing/node_keys.ts";
import { Forbidden, Unauthenticated } from "../errors/mod.ts";
import { accountPeer } from "./account_peer.ts";
import { signNodeRequest } from "./node_request.ts";

Deno.test("accountPeer: a verified LAN peer of the account, or the hub's word, and no one else", async () => {
  const a = await freshNodeKey();
  const b = await freshNodeKey();
  const path = "/v1/chat/completions";
  const signature = await signNodeRequest(a.privateKey, a.publicJwk, {
    from: a.id,
    to: b.id,
    method: "POST",
    path,
  });
  const lan = new Map([[a.id, "acct-1"]]);
  const self = { nodeId: b.id, accountId: "acct-1", lanAccountOf: (id: string) => lan.get(id) };
  const request = { method: "POST", path, signature };
  assert.equal(await accountPeer(self, request), a.id);
  // Through the hub: the account the hub verified decides, whatever the LAN says.
  assert.equal(
    await accountPeer({ ...self, lanAccountOf: () => undefined }, {
      ...request,
      hubAccount: "acct-1",
    }),
    a.id,
  );
  await assert.rejects(
    accountPeer(self, { ...request, hubAccount: "acct-2" }),
    (e) => e instanceof Forbidden && /not of this node's account/.test(e.message),
  );
  lan.set(a.id, "acct-2");
  await assert.rejects(accountPeer(self, request), Forbidden);
  lan.delete(a.id);
  await assert.rejects(
    accountPeer(self, request),
    (e) => e instanceof Forbidden && /not a verified peer/.test(e.message),
  );
  await assert.rejects(accountPeer(self, { ...request, signature: null }), Unauthenticated);
  await assert.rejects(
    accountPeer({ ...self, accountId: "" }, request),
    (e) => e instanceof Forbidden && /has no account/.test(e.message),
  );
  await assert.rejects(accountPeer(self, { ...request, path: "/v1/embeddings" }), Forbidden);
});
