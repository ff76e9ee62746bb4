import assert from "node:assert/strict";
import { Pipeline } from "./pipeline.ts";
import {
  mountServices,
  reservedPrefixes,
  routeHint,
  type Service,
  startOrUnwind,
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
  const running = await startOrUnwind(async (stack) => {
    stack.defer(() => void log.push("server"));
    await startServices([service("a", "/a", log), service("b", "/b", log)], stack);
    return { transport: "tcp", hostname: "127.0.0.1", port: 1 };
  });
  assert.deepEqual(log, ["start a", "start b"], "nothing ended when the start returns");
  await running.shutdown();
  assert.deepEqual(log, ["start a", "start b", "end b", "end a", "server"]);
});

Deno.test("startOrUnwind: a failed start ends what it opened and throws its own error, not a cleanup's", async () => {
  const log: string[] = [];
  const logged: string[] = [];
  const consoleError = console.error;
  console.error = (line: string) => void logged.push(line);
  try {
    const started = startOrUnwind((stack) => {
      stack.defer(() => void log.push("database closed"));
      stack.defer(() => Promise.reject(new Error("goodbye not sent")));
      stack.defer(() => void log.push("server stopped"));
      return Promise.reject(new RangeError("port 8083 is taken"));
    });
    await assert.rejects(started, { name: "RangeError", message: "port 8083 is taken" });
  } finally {
    console.error = consoleError;
  }
  assert.deepEqual(log, ["server stopped", "database closed"], "every cleanup ran, in reverse");
  assert.deepEqual(logged, ["while ending a start that failed: goodbye not sent"]);
});

Deno.test("Pipeline: without a notFound step, a plain 404 in the pipeline's format", async () => {
  const answer = await new Pipeline({}).serve(new Request("http://h/x?y=1", { method: "PUT" }));
  assert.equal(answer.status, 404);
  assert.match(await answer.text(), /no route for PUT \/x/);
});
