import assert from "node:assert/strict";
import { NotFound } from "../errors/mod.ts";
import { Pipeline, splitUrl } from "./pipeline.ts";
import { statusCodeError } from "./errors.ts";

function pipeline(): Pipeline {
  const pipeline = new Pipeline({
    notFound: ({ path }) => Response.json({ missing: path }, { status: 404 }),
    before: ({ request }) =>
      request.headers.has("x-stop") ? new Response("stopped", { status: 403 }) : undefined,
    allowHeaders: ["X-Extra"],
  });
  pipeline.route("GET", "/sync/:id", ({ params, remote }) => Response.json({ params, remote }));
  pipeline.route("GET", "/async", async () => {
    await Promise.resolve();
    return new Response("later");
  });
  pipeline.route("GET", "/fails", () => {
    throw new NotFound("no such thing; list them first");
  });
  pipeline.route(
    "GET",
    "/own-cors",
    () => new Response("x", { headers: { "Access-Control-Allow-Origin": "https://a.example" } }),
  );
  pipeline.route("GET", "/fetched", () => Response.redirect("http://127.0.0.1/elsewhere", 302));
  pipeline.route("PUT", "/formatted", () => new Response(), { errorFormat: statusCodeError });
  pipeline.route("GET", "/readable", () => new Response("r"));
  return pipeline;
}

const url = (path: string) => `http://127.0.0.1:8083${path}`;

Deno.test("Pipeline: a synchronous route answers without a promise, with CORS and the context", async () => {
  const info = {
    remoteAddr: { transport: "tcp", hostname: "10.0.0.9", port: 5000 },
  } as Deno.ServeHandlerInfo;
  const answer = pipeline().serve(new Request(url("/sync/a%20b?x=1")), { info });
  assert.ok(answer instanceof Response);
  assert.deepEqual(await answer.json(), { params: { id: "a b" }, remote: "10.0.0.9" });
  assert.equal(answer.headers.get("access-control-allow-origin"), "*");
  assert.equal(answer.headers.get("access-control-expose-headers"), null, "only file answers");
});

Deno.test("Pipeline: preflight, async routes, errors, 405 in the route's format, misses, before", async () => {
  const p = pipeline();
  const preflight = await p.serve(new Request(url("/sync/1"), { method: "OPTIONS" }));
  assert.equal(preflight.status, 204);
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /X-Extra/);
  assert.match(preflight.headers.get("access-control-allow-methods") ?? "", /DELETE/);

  const later = p.serve(new Request(url("/async")));
  assert.ok(later instanceof Promise);
  assert.equal(await (await later).text(), "later");

  const failed = await p.serve(new Request(url("/fails")));
  assert.equal(failed.status, 404);
  assert.deepEqual(await failed.json(), {
    error: { code: 404, message: "no such thing; list them first" },
  });
  assert.equal(failed.headers.get("access-control-allow-origin"), "*");

  const wrongMethod = await p.serve(new Request(url("/formatted")));
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get("allow"), "PUT, OPTIONS");
  assert.deepEqual(await wrongMethod.json(), {
    message: "GET is not allowed here; use PUT, OPTIONS",
    statusCode: 405,
  });

  const readOnly = await p.serve(new Request(url("/readable"), { method: "PUT" }));
  assert.equal(readOnly.headers.get("allow"), "GET, HEAD, OPTIONS", "HEAD is served where GET is");
  await readOnly.body?.cancel();

  const missing = await p.serve(new Request(url("/nowhere?q=1")));
  assert.deepEqual(await missing.json(), { missing: "/nowhere" });

  const stopped = await p.serve(new Request(url("/sync/1"), { headers: { "x-stop": "1" } }));
  assert.equal(stopped.status, 403);
  await stopped.body?.cancel();
});

Deno.test("Pipeline: a response's own CORS origin is kept; immutable headers are copied", async () => {
  const p = pipeline();
  const own = await p.serve(new Request(url("/own-cors")));
  assert.equal(own.headers.get("access-control-allow-origin"), "https://a.example");
  await own.body?.cancel();
  const redirect = await p.serve(new Request(url("/fetched")));
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.get("access-control-allow-origin"), "*");
});

Deno.test("splitUrl: path and query without parsing the URL", () => {
  const cases: [string, ReturnType<typeof splitUrl>][] = [
    ["http://h:1/a/b?c=d", { path: "/a/b", search: "?c=d" }],
    ["http://h/", { path: "/", search: "" }],
    ["http://[::1]:8083/x?", { path: "/x", search: "?" }],
    ["http://h:1/a?b?c", { path: "/a", search: "?b?c" }],
  ];
  for (const [given, want] of cases) assert.deepEqual(splitUrl(given), want, given);
});
