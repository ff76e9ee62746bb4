import assert from "node:assert/strict";
import { Pipeline } from "../http/pipeline.ts";
import type { Deployments } from "./deployments.ts";
import { microserviceGateway } from "./gateway.ts";

/** Deployments serving `/c1/hello` with `answer`, and knowing the client segment `c2`. */
function deployments(answer: () => Response, seen: string[]): Deployments {
  const runtime = {
    forward: (request: Request, path: string, port: number) => {
      seen.push(`${request.method} ${path} ${port}`);
      return Promise.resolve(answer());
    },
  };
  const match = (path: string) =>
    path.startsWith("/c1/hello")
      ? { runtime, path: path.slice("/c1/hello".length) || "/" }
      : path.startsWith("/c2/")
      ? { unknown: "c2" }
      : undefined;
  return { match } as unknown as Deployments;
}

function gateway(answer: () => Response, seen: string[] = []): Pipeline {
  const pipeline = new Pipeline({});
  pipeline.notFound(
    microserviceGateway(deployments(answer, seen), { port: () => 8083, hint: "the API is at /x" }),
  );
  return pipeline;
}

const get = (pipeline: Pipeline, path: string) =>
  Promise.resolve(pipeline.serve(new Request(`http://127.0.0.1:8083${path}`)));

Deno.test("gateway: a microservice's answer, forwarded with its path and query, file CORS added", async () => {
  const seen: string[] = [];
  const answer = await get(gateway(() => new Response("hi"), seen), "/c1/hello/a?b=1");
  assert.equal(await answer.text(), "hi");
  assert.deepEqual(seen, ["GET /a?b=1 8083"]);
  assert.equal(answer.headers.get("access-control-allow-origin"), "*");
  assert.match(answer.headers.get("access-control-expose-headers")!, /Content-Range/);
});

Deno.test("gateway: a microservice's own CORS answer is kept", async () => {
  const own = () =>
    new Response("hi", { headers: { "Access-Control-Allow-Origin": "https://a.example" } });
  const answer = await get(gateway(own), "/c1/hello");
  assert.equal(answer.headers.get("access-control-allow-origin"), "https://a.example");
  assert.equal(answer.headers.get("access-control-expose-headers"), null);
  await answer.body?.cancel();
});

Deno.test("gateway: 404s name the node's APIs, or the container list for a known client", async () => {
  const nothing = await get(gateway(() => new Response()), "/nowhere");
  assert.equal(nothing.status, 404);
  assert.match(await nothing.text(), /no route for GET \/nowhere; the API is at \/x/);
  const unknown = await get(gateway(() => new Response()), "/c2/gone");
  assert.equal(unknown.status, 404);
  assert.match(await unknown.text(), /no microservice at \/c2\/gone; GET \/mcm\/v1\/containers/);
});
