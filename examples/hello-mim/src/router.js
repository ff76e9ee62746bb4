// A small router for (context, req, res) handlers: "/items/:key" style patterns.

/** Splits "/a/b?x=1" into its path and its query parameters. */
export function parseUrl(url) {
  const [path, query = ""] = url.split("?");
  return { path, query: Object.fromEntries(new URLSearchParams(query)) };
}

/** A router: add routes with route(method, pattern, handler), then call handle(). */
export function createRouter() {
  const routes = [];
  return {
    route(method, pattern, handler) {
      const names = [];
      const regex = new RegExp(
        "^" + pattern.replace(/:([A-Za-z]+)/g, (_, name) => {
          names.push(name);
          return "([^/]+)";
        }) + "$",
      );
      routes.push({ method, regex, names, handler });
    },
    handle(context, req, res) {
      const { path, query } = parseUrl(req.url);
      for (const route of routes) {
        const match = route.method === req.method && route.regex.exec(path);
        if (!match) continue;
        const params = Object.fromEntries(
          route.names.map((name, i) => [name, decodeURIComponent(match[i + 1])]),
        );
        return route.handler({ context, req, res, params, query });
      }
      sendJson(res, 404, { code: 404, message: "Not Found" });
    },
  };
}

/** Ends the response with a JSON body. */
export function sendJson(res, status, body) {
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(body));
}
