/**
 * Baselines of `deno task bench --only requests` (scripts/bench/request_path.ts): the node's
 * routes as a user would write them instead with Hono on Deno.serve, on 127.0.0.1 (prints its
 * port), answering what the node answered:
 * - `GET /ai/store/v1/models/:id`: the model record in MODEL.json (404 for another id);
 * - `POST /jsonrpc/v1`: JSON-RPC `getMe`, answering the response in GETME.json (the node's
 *   answer) with the request's id.
 * With `--bare`, the same two routes from a bare Deno.serve handler, without Hono. Both answer
 * with the JSON and its Content-Type alone; hono_contract_server.ts does the node's work besides
 * (CORS on every answer, the header reads and checks).
 * Usage: `deno run --allow-net=127.0.0.1 --allow-read hono_server.ts [--bare] MODEL.json GETME.json`.
 *
 * @module
 */
import { Hono } from "hono";

const bare = Deno.args[0] === "--bare";
const [modelFile, getMeFile] = Deno.args.slice(bare ? 1 : 0);
const model: { id: string } = JSON.parse(await Deno.readTextFile(modelFile));
const getMe: { id: unknown } = JSON.parse(await Deno.readTextFile(getMeFile));
const MODEL_PATH = "/ai/store/v1/models/";
const notFound = { error: { code: 404, message: "model not found" } };

/** The JSON-RPC answer to a request: getMe, or "method not found". */
function answer(request: { id?: unknown; method?: unknown }) {
  if (request.method === "getMe") return { ...getMe, id: request.id };
  return {
    jsonrpc: "2.0",
    id: request.id ?? null,
    error: { code: -32601, message: "Method not found" },
  };
}

const options = {
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }: { port: number }) => console.log(`port ${port}`),
};

if (bare) {
  Deno.serve(options, async (request) => {
    const { pathname } = new URL(request.url);
    if (request.method === "GET" && pathname.startsWith(MODEL_PATH)) {
      return pathname.slice(MODEL_PATH.length) === model.id
        ? Response.json(model)
        : Response.json(notFound, { status: 404 });
    }
    if (request.method === "POST" && pathname === "/jsonrpc/v1") {
      return Response.json(answer(await request.json()));
    }
    return new Response("not found", { status: 404 });
  });
} else {
  const app = new Hono();
  app.get(
    `${MODEL_PATH}:id`,
    (c) => c.req.param("id") === model.id ? c.json(model) : c.json(notFound, 404),
  );
  app.post("/jsonrpc/v1", async (c) => c.json(answer(await c.req.json())));
  Deno.serve(options, app.fetch);
}
