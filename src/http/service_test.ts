import assert from "node:assert/strict";
import { Pipeline } from "./pipeline.ts";
import {
  mountServices,
  reservedPrefixes,
  routeHint,
  runningServer,
  type Service,
  startServices,
} from "./service.ts";

/** A service answering GET `path` with its name, logging its start and end into `log`. */
function service(name: string, path: string, log: string[], hint?: string): Service {
  return {
    name,
    prefixes: [path],
    hint,
    mount: (pipeline) => pipeline.route("GET", path, () => new Response(name)),
    start: () => void log.push(`start ${name}`),
    [Symbol.asyncDispose]: () => Promise.resolve(void log.push(`end ${name}`)),
  };
}

Deno.test("services: mounted in a loop, their prefixes reserved, the named ones in the hint", async () => {
  const log: string[] = [];
  const services = [
    service("store", "/store", log, "the store under /store"),
    service("quiet", "/quiet", log),
    service("mcm", "/mcm", log, "deployment at /mcm"),
  ];
  const pipeline = new Pipeline({});
  mountServices(pipeline, services);
  pipeline.notFound(({ path }) => new Response(`${path}: ${routeHint(services)}`, { status: 404 }));
  assert.equal(await (await pipeline.serve(new Request("http://h/quiet"))).text(), "quiet");
  const missing = await pipeline.serve(new Request("http://h/nothing"));
  assert.equal(missing.status, 404);
  assert.equal(await missing.text(), "/nothing: the store under /store, deployment at /mcm");
  assert.deepEqual(reservedPrefixes(services), ["/store", "/quiet", "/mcm"]);
});

Deno.test("services: started in order, ended in reverse before what the stack held", async () => {
  const log: string[] = [];
  await using stack = new AsyncDisposableStack();
  stack.defer(() => void log.push("server"));
  await startServices([service("a", "/a", log), service("b", "/b", log)], stack);
  const running = runningServer({ transport: "tcp", hostname: "127.0.0.1", port: 1 }, stack);
  assert.ok(stack.disposed, "moved out of the start's stack");
  assert.deepEqual(log, ["start a", "start b"]);
  await running.shutdown();
  assert.deepEqual(log, ["start a", "start b", "end b", "end a", "server"]);
});

Deno.test("Pipeline: without a notFound step, a plain 404 in the pipeline's format", async () => {
  const answer = await new Pipeline({}).serve(new Request("http://h/x?y=1", { method: "PUT" }));
  assert.equal(answer.status, 404);
  assert.match(await answer.text(), /no route for PUT \/x/);
});
