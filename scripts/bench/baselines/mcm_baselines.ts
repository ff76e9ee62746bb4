/**
 * Baselines of the microservice benchmark, on 127.0.0.1 (prints its port):
 * - `/hello`: a bare Deno.serve handler answering the body the benchmark's microservice answers;
 * - `/isolate`: the same microservice run the reference's way, in a fresh isolate (a new Worker
 *   without permissions) per request.
 * Usage: `deno run --allow-net=127.0.0.1 --allow-read mcm_baselines.ts BUNDLE.js`.
 *
 * @module
 */
const code = await Deno.readTextFile(Deno.args[0]);
const worker = `
self.onmessage = (event) => {
  globalThis.mimikModule = { exports: undefined };
  (0, eval)(${JSON.stringify(code)});
  const headers = {};
  mimikModule.exports({}, { url: event.data, method: "GET", headers: {}, body: "" }, {
    statusCode: 200,
    setHeader(name, value) { headers[name] = value; },
    end(body) { self.postMessage({ headers, body }); },
  });
};`;
const workerUrl = URL.createObjectURL(new Blob([worker], { type: "text/javascript" }));

Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(`port ${port}`) },
  (request) => {
    const { pathname } = new URL(request.url);
    if (pathname === "/hello") {
      return new Response("hello", { headers: { "content-type": "text/plain" } });
    }
    const isolate = new Worker(workerUrl, { type: "module", deno: { permissions: "none" } });
    return new Promise((resolve) => {
      isolate.onmessage = (event) => {
        isolate.terminate();
        resolve(new Response(event.data.body, { headers: event.data.headers }));
      };
      isolate.postMessage("/hello");
    });
  },
);
