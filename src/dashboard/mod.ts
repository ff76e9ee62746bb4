/**
 * The node's web page: its routes, the status endpoint it polls, and (in ui/) the page itself,
 * bundled by `deno task gen`.
 *
 * @module
 */
export * from "./routes.ts";
export * from "./service.ts";
