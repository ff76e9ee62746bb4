import assert from "node:assert/strict";
import type { Identity } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";
import type { TunnelSocket } from "../tunnel/raw_socket.ts";
import { binaryCodec } from "../tunnel/wire_frames.ts";
import { headerOf, nodeTunnel, type TunnelOrigin } from "./tunnel_requests.ts";

Deno.test("tunnel requests: headerOf reads pairs as Headers.get does", () => {
  const lists: [string, string][][] = [
    [],
    [["authorization", "Bearer abc"]],
    [["Authorization", "  Bearer abc \t"]],
    [["authorization", "Bearer a"], ["x-other", "1"], ["AUTHORIZATION", "Bearer b"]],
    [["x-edge-caller-account", "acct"], ["x-edge-caller-accounts", "no"]],
    [["authorization", ""], ["authorization", " x "]],
  ];
  for (const pairs of lists) {
    for (const name of ["authorization", "x-edge-caller-account", "x-missing"]) {
      assert.equal(headerOf(pairs, name), new Headers(pairs).get(name), JSON.stringify(pairs));
    }
  }
});

/** Serves one tunnelled request head with `headers`; what the node's handler was given. */
async function served(headers: [string, string][], valid = "good") {
  const seen = Promise.withResolvers<{ request: Request; origin: TunnelOrigin }>();
  const socket = { readyState: WebSocket.OPEN, send() {}, close() {} };
  const tunnel = nodeTunnel(socket as unknown as TunnelSocket, {
    identity: {
      checkAccountToken: (token: string) =>
        token === valid
          ? Promise.resolve({})
          : Promise.reject(new TokenError("InvalidToken", "not valid")),
    } as unknown as Identity,
    port: () => 8080,
    serve: (request, origin) => {
      seen.resolve({ request, origin });
      return Promise.resolve(new Response("ok"));
    },
  });
  const head = { t: "req", s: 1, method: "GET", path: "/a?b=c", port: 8080, headers, body: false };
  tunnel.receive(binaryCodec.head(head, undefined) as Uint8Array);
  return await seen.promise;
}

Deno.test("tunnel requests: the handler sees x-edge-via: hub once, whatever the hub sent", async () => {
  const cases: [string, string][][] = [
    [["x-edge-via", "hub"], ["x-edge-caller-account", "acct"]],
    [["x-edge-caller-account", "acct"]],
    [["X-Edge-Via", "browser"], ["x-edge-caller-account", "acct"]],
    [["x-edge-via", "hub"], ["x-edge-via", "hub"], ["x-edge-caller-account", "acct"]],
  ];
  for (const headers of cases) {
    const { request, origin } = await served(headers);
    assert.equal(request.headers.get("x-edge-via"), "hub", JSON.stringify(headers));
    assert.equal(request.url, "http://localhost:8080/a?b=c");
    assert.deepEqual(origin, { apiKeyGranted: false, hubAccount: "acct" });
  }
});

Deno.test("tunnel requests: a valid account token stands in for the API key, nothing else does", async () => {
  const granted = await served([["authorization", "Bearer good"]]);
  assert.deepEqual(granted.origin, { apiKeyGranted: true, hubAccount: undefined });
  assert.equal(granted.request.headers.get("authorization"), "Bearer good");
  for (
    const headers of [
      [["authorization", "Bearer bad"]],
      [["authorization", "Bearer good"], ["authorization", "Bearer good"]],
      [["authorization", "Basic good"]],
      [],
    ] as [string, string][][]
  ) {
    const { origin } = await served(headers);
    assert.equal(origin.apiKeyGranted, false, JSON.stringify(headers));
  }
});
