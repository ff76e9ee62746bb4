// An edgenode microservice written for the reference programming model: the bundle sets
// mimikModule.exports to a (context, req, res) handler. Each route exercises one part of the
// context; the tests deploy it and call every one.
import { createRouter, sendJson } from "./router.js";

const router = createRouter();
// Module state survives between requests on edgenode (warm containers), unlike the reference.
let served = 0;

router.route("GET", "/", ({ res }) => sendJson(res, 200, { message: "Hello from hello-mim" }));
router.route("GET", "/env", ({ context, res }) => sendJson(res, 200, context.env));
router.route("GET", "/info", ({ context, res }) => sendJson(res, 200, context.info));
router.route(
  "GET",
  "/request",
  ({ req, res }) =>
    sendJson(res, 200, {
      url: req.url,
      method: req.method,
      headers: req.headers,
      authorization: req.authorization ?? null,
    }),
);
router.route(
  "GET",
  "/sayHello/:name",
  ({ res, params }) => sendJson(res, 200, { message: `Hello ${params.name}!` }),
);
router.route(
  "GET",
  "/add",
  ({ res, query }) => sendJson(res, 200, { sum: Number(query.x) + Number(query.y) }),
);
router.route(
  "POST",
  "/form",
  ({ req, res }) => sendJson(res, 200, Object.fromEntries(new URLSearchParams(req.body))),
);
router.route("POST", "/json", ({ req, res }) => {
  try {
    sendJson(res, 200, { received: JSON.parse(req.body) });
  } catch {
    sendJson(res, 400, { code: 400, message: "the body is not JSON" });
  }
});
router.route("GET", "/served", ({ res }) => sendJson(res, 200, { served: ++served }));

// context.storage: synchronous, persistent, private to this container.
router.route("PUT", "/items/:key", ({ context, req, res, params, query }) => {
  if (query.tag) context.storage.setItemWithTag(params.key, req.body, query.tag);
  else context.storage.setItem(params.key, req.body);
  sendJson(res, 200, { key: params.key, value: req.body });
});
router.route("GET", "/items/:key", ({ context, res, params }) => {
  const value = context.storage.getItem(params.key);
  if (value === null) return sendJson(res, 404, { code: 404, message: "no such item" });
  sendJson(res, 200, { key: params.key, value });
});
router.route("GET", "/items", ({ context, res, query }) => {
  const items = {};
  const collect = (key, value) => {
    items[key] = value;
  };
  if (query.tag) context.storage.eachItemByTag(query.tag, collect);
  else context.storage.eachItem(collect);
  sendJson(res, 200, items);
});
router.route("DELETE", "/items/:key", ({ context, res, params }) => {
  context.storage.removeItem(params.key);
  sendJson(res, 200, { removed: params.key });
});
router.route(
  "DELETE",
  "/items",
  ({ context, res, query }) =>
    sendJson(res, 200, { removed: context.storage.removeItemsByTag(query.tag) }),
);

// context.http.request to another endpoint of the local node.
router.route("GET", "/ping-node", ({ context, res }) => {
  context.http.request({
    url: `http://127.0.0.1:${context.info.httpPort}/mds/v1/nodes?ping=true`,
    success: (result) =>
      sendJson(res, 200, { status: result.status, node: JSON.parse(result.data) }),
    error: (error) => sendJson(res, 502, { code: 502, message: error.message }),
  });
});

// A streamed response: server-sent events written one by one.
router.route("GET", "/stream", ({ res, query }) => {
  const count = Number(query.count ?? 3);
  res.setHeader("content-type", "text/event-stream");
  let sent = 0;
  const timer = setInterval(() => {
    res.write(`data: ${JSON.stringify({ n: sent })}\n\n`);
    if (++sent === count) {
      clearInterval(timer);
      res.end();
    }
  }, 20);
});

mimikModule.exports = (context, req, res) => {
  console.log(`${req.method} ${req.url}`);
  router.handle(context, req, res);
};
