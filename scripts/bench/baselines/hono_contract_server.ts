/**
 * A baseline of `deno task bench --only requests` (scripts/bench/request_path.ts): the two JSON
 * routes of hono_server.ts in Hono on Deno.serve, written as a user would who wants the node's
 * contract (docs/benchmarks.md, issue 39), with Hono's own means:
 * - every answer carries `Access-Control-Allow-Origin: *` (hono/cors, with the node's preflight);
 * - `GET /ai/store/v1/models/:id` checks the id as the registry's spec says (400), answers the
 *   record in MODEL.json or the node's 404;
 * - `POST /jsonrpc/v1` is for local callers (403 with `x-edge-via`, the hub's mark), takes the
 *   Content-Types the node takes or none (415 otherwise), a body of at most 1 MiB
 *   (hono/body-limit, 413), and answers JSON-RPC 2.0 as the node does: getMe (GETME.json's result,
 *   the request's id), "method not found", parse and envelope errors, batches.
 * Its answers (status, body, Content-Type, CORS) match the node's: hono_contract_server_test.ts.
 * Usage: `deno run --allow-net=127.0.0.1 --allow-read hono_contract_server.ts MODEL.json GETME.json`.
 *
 * @module
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";

const [modelFile, getMeFile] = Deno.args;
const model: { id: string } = JSON.parse(await Deno.readTextFile(modelFile));
const { result: me }: { result: unknown } = JSON.parse(await Deno.readTextFile(getMeFile));
const MODEL_PATH = "/ai/store/v1/models/";
/** What the node takes as JSON-RPC text (src/jsonrpc/routes.ts). */
const JSONRPC_CONTENT_TYPES = [
  "application/json",
  "application/json-rpc",
  "application/jsonrequest",
  "text/plain",
  "application/x-www-form-urlencoded",
];
const MAX_RPC_BYTES = 1 << 20;

/** The node's error body. */
const failure = (code: number, message: string) => ({ error: { code, message } });

/** Why `id` is not a model id (the registry spec's rules), or undefined when it is one. */
function badModelId(id: string): string | undefined {
  if (id.length > 255) return "must be at most 255 characters";
  if (!/^[a-zA-Z0-9._-]+$/.test(id)) return "may contain only letters, digits, '.', '_' and '-'";
  if (/^[.-]/.test(id)) return "must not start with '.' or '-'";
  if (id.includes("..")) return "must not contain '..'";
}

type Id = string | number | null;
const rpcError = (id: Id, code: number, message: string) => ({
  jsonrpc: "2.0",
  id,
  error: { code, message },
});

/** The answer to one JSON-RPC call, as the node gives it. */
function call(item: unknown) {
  if (typeof item !== "object" || item === null || Array.isArray(item)) {
    return rpcError(null, -32600, "Invalid Request: must be an object");
  }
  const { jsonrpc, id = null, method } = item as { jsonrpc?: unknown; id?: Id; method?: unknown };
  if (jsonrpc !== "2.0") return rpcError(id, -32600, 'Invalid Request: jsonrpc must be "2.0"');
  if (method === "getMe") return { jsonrpc: "2.0", id, result: me };
  return rpcError(id, -32601, "Method not found");
}

const app = new Hono();
app.use(cors({
  allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
  allowHeaders: [
    "Accept",
    "Authorization",
    "Content-Type",
    "Range",
    "If-None-Match",
    "If-Range",
    "X-Client-Id",
  ],
  maxAge: 600,
}));
app.get(`${MODEL_PATH}:id`, (c) => {
  const id = c.req.param("id");
  const bad = badModelId(id);
  if (bad) return c.json(failure(400, `path parameter 'id' ${bad}`), 400);
  return id === model.id
    ? c.json(model)
    : c.json(failure(404, `model '${id}' does not exist`), 404);
});
app.post(
  "/jsonrpc/v1",
  (c, next) => {
    if (c.req.header("x-edge-via") !== undefined) {
      return c.json(
        failure(403, "this endpoint is for local callers only, not through the hub"),
        403,
      );
    }
    const given = c.req.header("content-type");
    if (given === undefined) return next();
    const type = given.split(";")[0].trim().toLowerCase();
    if (JSONRPC_CONTENT_TYPES.includes(type)) return next();
    return c.json(
      failure(
        415,
        `Content-Type must be ${JSONRPC_CONTENT_TYPES.join(" or ")} (got ${
          type ? `'${type}'` : "none"
        })`,
      ),
      415,
    );
  },
  bodyLimit({
    maxSize: MAX_RPC_BYTES,
    onError: (c) =>
      c.json(failure(413, `JSON-RPC request is larger than ${MAX_RPC_BYTES} bytes`), 413),
  }),
  async (c) => {
    let body: unknown;
    try {
      body = JSON.parse(await c.req.text());
    } catch {
      return c.json(rpcError(null, -32700, "Parse error: the body is not JSON"));
    }
    return c.json(Array.isArray(body) ? body.map(call) : call(body));
  },
);

Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`port ${port}`),
}, app.fetch);
