/**
 * `edgenode serve` and `edgenode hub`: their flags and usage. What they run (the node's and the
 * hub's launchers) is given by main.ts, the composition root: the CLI does not import the node
 * or the hub.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { ConfigError } from "../config/config_error.ts";
import type { Env } from "./cli_context.ts";
import type { Command } from "./command.ts";

/** The flags `serve` and `hub` share (the node's ServeFlags). */
export interface ListenerFlags {
  /** `--host`: the address to listen on. */
  host?: string;
  /** `--port`: the port to listen on (0 to 65535). */
  port?: number;
  /** `--data-dir`: the data directory. */
  dataDir?: string;
  /** `--config`: the config file, instead of the data directory's. */
  config?: string;
  /** Trust files (`{ issuer, jwks }`) to add to the trusted issuers. */
  trust?: string[];
}

/** The flags of `hub` (the hub's HubFlags). */
export interface HubCommandFlags extends ListenerFlags {
  /** `--public-url`: where nodes reach the hub. */
  publicUrl?: string;
  /** `--nats`: NATS server URLs, comma-separated. */
  nats?: string;
}

/** Starts a node or a hub and resolves to the exit code when it stops. */
export type Launcher<F> = (flags: F, env: Env) => Promise<number>;

function listenerFlags(args: string[], extra: Record<string, { type: "string" }> = {}) {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: "string" },
      port: { type: "string" },
      "data-dir": { type: "string" },
      config: { type: "string" },
      trust: { type: "string", multiple: true },
      ...extra,
    },
    strict: true,
    allowPositionals: false,
  });
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d{1,5}$/.test(String(values.port)) || port > 65535) {
      throw new ConfigError(`--port must be a number from 0 to 65535 (got '${values.port}')`);
    }
  }
  const flags: ListenerFlags = {
    host: values.host as string | undefined,
    port,
    dataDir: values["data-dir"] as string | undefined,
    config: values.config as string | undefined,
    trust: values.trust as string[] | undefined,
  };
  return { values: values as Record<string, unknown>, flags };
}

/** `edgenode serve`, running `launch`. */
export function serveCommand(launch: Launcher<ListenerFlags>): Command {
  return {
    name: "serve",
    help: `  edgenode serve [--host H] [--port N] [--data-dir DIR] [--config FILE] [--trust FILE]...
      Runs a node (default 0.0.0.0:8083, data in $EDGENODE_DATA_DIR or ~/.edgenode).
      --trust adds a token issuer from a trust file (repeatable).`,
    local: true,
    run: (args, env) => launch(listenerFlags(args).flags, env),
  };
}

/** `edgenode hub`, running `launch`. */
export function hubCommand(launch: Launcher<HubCommandFlags>): Command {
  return {
    name: "hub",
    help: `  edgenode hub [--host H] [--port N] [--data-dir DIR] [--config FILE] [--public-url URL]
               [--trust FILE]... [--nats URL[,URL]]
      Runs a hub: account and proximity discovery and tunnels between networks (default
      0.0.0.0:8090, data in $EDGENODE_HUB_DIR or ~/.edgenode-hub). Nodes use it when their
      config has hub.url and they hold an account token. --nats joins a cluster of hubs
      sharing those NATS servers (the cluster key in <data dir>/cluster.key).`,
    local: true,
    run: (args, env) => {
      const { values, flags } = listenerFlags(args, {
        "public-url": { type: "string" },
        nats: { type: "string" },
      });
      return launch({
        ...flags,
        publicUrl: values["public-url"] as string | undefined,
        nats: values.nats as string | undefined,
      }, env);
    },
  };
}
