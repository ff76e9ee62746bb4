/**
 * The node's side of its hub: the link (opened with the account token, proved with the node
 * key, re-opened with back-off), the account and proximity listings, the bep and sep, serving
 * tunnelled requests in-process, and the 503 of a request that needs a hub when none is set.
 *
 * @module
 */
export * from "./hub_link.ts";
export * from "./hub_route.ts";
export * from "./require_hub.ts";
