import assert from "node:assert/strict";
import { carriesCors, markCorsListed, preflightHeaders } from "./cors.ts";

Deno.test("cors: markCorsListed marks an answer exactly when its headers have the origin", () => {
  const lists: [string, string][][] = [
    [],
    [["access-control-allow-origin", "*"]],
    [["content-type", "text/plain"], ["Access-Control-Allow-Origin", "https://a.example"]],
    [["access-control-allow-origins", "*"]],
    [["access-control-allow-methods", "GET"], ["x-access-control-allow-origin", "*"]],
  ];
  for (const pairs of lists) {
    const response = new Response(null, { headers: pairs });
    markCorsListed(response, pairs);
    const expected = new Response(null, { headers: pairs }).headers.has(
      "access-control-allow-origin",
    );
    assert.equal(carriesCors(response), expected, JSON.stringify(pairs));
  }
});

Deno.test("cors: the preflight allows Accept, Authorization and a service's own headers", () => {
  const allowed = preflightHeaders(["X-Own"])["Access-Control-Allow-Headers"].split(", ");
  for (const name of ["Accept", "Authorization", "Content-Type", "Range", "X-Own"]) {
    assert.ok(allowed.includes(name), `${name} in ${allowed}`);
  }
});
