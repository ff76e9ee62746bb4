/**
 * `edgenode hub`: its settings, the launcher (narrow permissions) and the hub process it starts,
 * the server, one session per node, listings, and hub clusters on NATS (cluster/).
 *
 * @module
 */
export * from "./hub_launcher.ts";
export * from "./hub_settings.ts";
