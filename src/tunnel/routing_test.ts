import assert from "node:assert/strict";
import { forwardedHeaders, HeaderPairs, tunnelAddress, tunnelToken } from "./routing.ts";

const lists: [string, string][][] = [
  [],
  [["Authorization", "Bearer abc"], ["x-edge-routing", "cm91dGU="], ["X-Edge-Port", "8083"]],
  [["authorization", "Bearer a"], ["AUTHORIZATION", "Bearer b"], ["x-edge-authorization", "x"]],
  [["connection", "keep-alive, X-Drop"], ["x-drop", "1"], ["keep-alive", "timeout=5"], ["a", "b"]],
  [["mimik-routing", "cm91dGU="], ["mimik-port", "8083"], ["x-edge-via", "client"]],
  [["x-edge-authorization", "Bearer t"], ["authorization", "Bearer m"], ["te", "trailers"]],
];

Deno.test("routing: HeaderPairs answers as the Headers it was read from", () => {
  for (const pairs of lists) {
    const headers = new Headers(pairs);
    const read = new HeaderPairs(headers);
    for (const [name] of [...pairs, ["X-Missing", ""]]) {
      assert.equal(read.get(name), headers.get(name), name);
      assert.equal(read.get(name.toUpperCase()), headers.get(name), name);
    }
    assert.deepEqual([...read], [...headers]);
    assert.deepEqual(tunnelAddress(read), tunnelAddress(headers));
    assert.equal(tunnelToken(read), tunnelToken(headers));
    assert.deepEqual(forwardedHeaders(read), forwardedHeaders(headers));
  }
});
