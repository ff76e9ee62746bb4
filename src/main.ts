/**
 * The edgenode program: `edgenode serve` runs a node; other subcommands are clients and tools.
 *
 * @module
 */
import { parseArgs } from "node:util";
import meta from "../deno.json" with { type: "json" };
import { ACCOUNT_HELP, accountTokenCommand } from "./cli/account_commands.ts";
import { CONTAINERS_HELP, containersCommand } from "./cli/container_commands.ts";
import { DEPLOY_HELP, deployCommand } from "./cli/deploy_command.ts";
import { IMAGE_HELP, imageCommand } from "./cli/image_commands.ts";
import { MODELS_HELP, modelsCommand } from "./cli/models_commands.ts";
import { NODES_HELP, nodesDecryptCommand } from "./cli/nodes.ts";
import { identityCommand, infoCommand, listNodesCommand, NODE_HELP } from "./cli/node_commands.ts";
import { GLOBAL_HELP } from "./cli/cli_context.ts";
import { closestName } from "./config/closest_name.ts";
import { launchHub } from "./hub/hub_launcher.ts";
import { startHub } from "./hub/hub_server.ts";
import type { HubFlags, HubSettings } from "./hub/hub_settings.ts";
import { initIssuer, parseTtl, signToken } from "./identity/issuer.ts";
import { ConfigError, type ServeFlags, type Settings } from "./node/config.ts";
import { launch } from "./node/launcher.ts";
import { startNode } from "./node/server.ts";
import { launcherSettings, stopRequested } from "./program/self_program.ts";
import { runContainerProcess } from "./program/worker_roles.ts";

/** The program's version, from deno.json. */
export const VERSION: string = meta.version;

const HELP = `edgenode ${VERSION}: turns this machine into an edge node.

Usage:
  edgenode serve [--host H] [--port N] [--data-dir DIR] [--config FILE] [--trust FILE]...
      Runs a node (default 0.0.0.0:8083, data in $EDGENODE_DATA_DIR or ~/.edgenode).
      --trust adds a token issuer from a trust file (repeatable).
  edgenode hub [--host H] [--port N] [--data-dir DIR] [--config FILE] [--public-url URL]
               [--trust FILE]...
      Runs a hub: account and proximity discovery and tunnels between networks (default
      0.0.0.0:8090, data in $EDGENODE_HUB_DIR or ~/.edgenode-hub). Nodes use it when their
      config has hub.url and they hold an account token.
  edgenode issuer init [--dir DIR] [--issuer NAME]
      Creates a local token issuer (default dir $EDGENODE_ISSUER_DIR or ~/.edgenode-issuer)
      and its trust file DIR/trust.json for --trust.
  edgenode token --account ID --scope "SCOPES" [--ttl 24h] [--node NODE_ID] [--dir DIR]
      Prints an edge access token signed by the local issuer. Scopes: edge:account:associate,
      edge:account:unassociate, edge:clusters, edge:mcm.
${NODE_HELP}
${MODELS_HELP}
${NODES_HELP}
${ACCOUNT_HELP}
${IMAGE_HELP}
${DEPLOY_HELP}
${CONTAINERS_HELP}
  edgenode version      Prints the version.
  edgenode help         Prints this help.

${GLOBAL_HELP}

Environment: EDGENODE_API_KEY overrides the config file's key; EDGENODE_DATA_DIR sets the data
directory. Exit codes: 0 done, 1 failed, 2 bad usage or configuration.`;

function env(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // Not allowed to read it: as if unset.
  }
}

/** The flags `serve` and `hub` share. */
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
  return {
    values,
    flags: {
      host: values.host as string | undefined,
      port,
      dataDir: values["data-dir"] as string | undefined,
      config: values.config as string | undefined,
      trust: values.trust as string[] | undefined,
    },
  };
}

function serveFlags(args: string[]): ServeFlags {
  return listenerFlags(args).flags;
}

function hubFlags(args: string[]): HubFlags {
  const { values, flags } = listenerFlags(args, { "public-url": { type: "string" } });
  return {
    ...flags,
    publicUrl: (values as Record<string, unknown>)["public-url"] as string | undefined,
  };
}

/** Waits until the launcher asks to stop (stopRequested), then runs `shutdown`. */
async function runUntilStopped(shutdown: () => Promise<void>): Promise<number> {
  const reason = await stopRequested();
  console.log(`stopping (${reason})`);
  // Requests in flight get a grace period; a long transfer must not keep the process up forever.
  const grace = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 10_000));
  if (await Promise.race([shutdown(), grace]) === "timeout") {
    console.log("stopped with requests still running after 10 s");
  }
  return 0;
}

/** `host:port` as a URL host. */
function shownHost(hostname: string): string {
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}

function issuerDir(dir: string | undefined): string {
  const home = env("HOME") ?? env("USERPROFILE");
  const chosen = dir ?? env("EDGENODE_ISSUER_DIR") ??
    (home ? `${home}/.edgenode-issuer` : undefined);
  if (!chosen) throw new ConfigError("no issuer directory: pass --dir");
  return chosen;
}

async function issuerCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== "init") {
    throw new ConfigError(`unknown issuer command '${sub ?? ""}'; try 'issuer init'`);
  }
  const { values } = parseArgs({
    args: rest,
    options: { dir: { type: "string" }, issuer: { type: "string", default: "edgenode-issuer" } },
    strict: true,
    allowPositionals: false,
  });
  const trust = await initIssuer(issuerDir(values.dir), values.issuer);
  console.log(`Issuer '${values.issuer}' created. Let a node trust it with:
  edgenode serve --trust ${trust}`);
  return 0;
}

async function tokenCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      account: { type: "string" },
      scope: { type: "string" },
      ttl: { type: "string", default: "24h" },
      node: { type: "string" },
      dir: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (!values.account) throw new ConfigError("--account is required");
  if (!values.scope?.trim()) {
    throw new ConfigError('--scope is required, e.g. "edge:account:associate"');
  }
  console.log(
    await signToken(issuerDir(values.dir), {
      account: values.account,
      scope: values.scope.trim(),
      ttlSeconds: parseTtl(values.ttl),
      nodeId: values.node,
    }),
  );
  return 0;
}

/** The child side of `serve`: runs the node until a signal, or until the launcher goes away. */
async function runNode(): Promise<number> {
  const settings = await launcherSettings<Settings>();
  if (settings.apiKey.length < 16) {
    console.warn("warning: the API key is shorter than 16 characters; anyone nearby may guess it");
  }
  const node = await startNode(settings);
  const url = `http://${shownHost(node.hostname)}:${node.port}`;
  console.log(`edgenode ${VERSION} listening on ${url} (pid ${Deno.pid})`);
  if (settings.dashboard.enabled) console.log(`dashboard at ${url}${settings.dashboard.path}`);
  return await runUntilStopped(node.shutdown);
}

/** The child side of `hub`. */
async function runHub(): Promise<number> {
  const hub = await startHub(await launcherSettings<HubSettings>());
  console.log(
    `edgenode hub ${VERSION} listening on http://${
      shownHost(hub.hostname)
    }:${hub.port} (pid ${Deno.pid})`,
  );
  return await runUntilStopped(hub.shutdown);
}

/** The usage blocks of HELP for one command (`edgenode CMD --help`), or undefined. */
function commandHelp(command: string): string | undefined {
  const blocks: string[][] = [];
  for (const line of HELP.split("\n")) {
    if (line.startsWith("  edgenode ")) blocks.push([line]);
    else if (line.startsWith("    ") && blocks.length > 0) blocks[blocks.length - 1].push(line);
  }
  const own = blocks.filter((block) => block[0].split(/\s+/)[2] === command);
  if (own.length === 0) return undefined;
  const usage = `Usage:\n${own.map((block) => block.join("\n")).join("\n")}`;
  const local = ["serve", "hub", "issuer", "token", "version", "help"];
  return local.includes(command) ? usage : `${usage}\n\n${GLOBAL_HELP}`;
}

/** The commands a user types (the `__` ones are the program's own). */
const COMMANDS = [
  "serve",
  "hub",
  "issuer",
  "token",
  "nodes",
  "me",
  "associate",
  "unassociate",
  "info",
  "models",
  "account-token",
  "image",
  "images",
  "deploy",
  "containers",
  "version",
  "help",
];

/** Runs the program with these arguments and returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if (command && (rest.includes("--help") || rest.includes("-h"))) {
    const help = commandHelp(command);
    if (help) {
      console.log(help);
      return 0;
    }
  }
  try {
    switch (command) {
      case "serve":
        return await launch(serveFlags(rest), env);
      case "__node":
        return await runNode();
      case "hub":
        return await launchHub(hubFlags(rest), env);
      case "__hub":
        return await runHub();
      case "__container":
        return await runContainerProcess(rest);
      case "issuer":
        return await issuerCommand(rest);
      case "token":
        return await tokenCommand(rest);
      case "nodes":
        return rest[0] === "decrypt"
          ? await nodesDecryptCommand(rest.slice(1))
          : await listNodesCommand(rest, env);
      case "me":
      case "associate":
      case "unassociate":
        return await identityCommand(command, rest, env);
      case "info":
        return await infoCommand(rest, env);
      case "models":
        return await modelsCommand(rest, env);
      case "account-token":
        return await accountTokenCommand(rest, env);
      case "image":
      case "images":
        return await imageCommand(rest, env);
      case "deploy":
        return await deployCommand(rest, env);
      case "containers":
        return await containersCommand(rest, env);
      case "version":
      case "--version":
        console.log(VERSION);
        return 0;
      case undefined:
      case "help":
      case "--help":
      case "-h":
        console.log(HELP);
        return 0;
      default: {
        const near = closestName(command, COMMANDS);
        console.error(
          `edgenode: unknown command '${command}'${
            near ? `; did you mean '${near}'?` : ""
          } ('edgenode help' lists the commands)`,
        );
        return 2;
      }
    }
  } catch (error) {
    const usage = error instanceof ConfigError ||
      String((error as { code?: unknown }).code ?? "").startsWith("ERR_PARSE_ARGS");
    console.error(`edgenode: ${(error as Error).message}`);
    return usage ? 2 : 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
