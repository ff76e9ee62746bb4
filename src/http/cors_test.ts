import assert from "node:assert/strict";
import { carriesCors, markCorsListed } from "./cors.ts";

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
