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
import { RUN_HELP, runCommand } from "./cli/run_command.ts";
import { identityCommand, infoCommand, listNodesCommand, NODE_HELP } from "./cli/node_commands.ts";
import { GLOBAL_HELP } from "./cli/cli_context.ts";
import { ISSUER_HELP, issuerCommand, tokenCommand } from "./cli/issuer_commands.ts";
import { closestName } from "./config/closest_name.ts";
import { launchHub, runHub } from "./hub/hub_launcher.ts";
import type { HubFlags } from "./hub/hub_settings.ts";
import { ConfigError, type ServeFlags } from "./node/config.ts";
import { launch, runNode } from "./node/launcher.ts";
import { runContainerProcess } from "./program/container_workers.ts";

/** The program's version, from deno.json. */
export const VERSION: string = meta.version;

const HELP = `edgenode ${VERSION}: turns this machine into an edge node.

Usage:
  edgenode serve [--host H] [--port N] [--data-dir DIR] [--config FILE] [--trust FILE]...
      Runs a node (default 0.0.0.0:8083, data in $EDGENODE_DATA_DIR or ~/.edgenode).
      --trust adds a token issuer from a trust file (repeatable).
  edgenode hub [--host H] [--port N] [--data-dir DIR] [--config FILE] [--public-url URL]
               [--trust FILE]... [--nats URL[,URL]]
      Runs a hub: account and proximity discovery and tunnels between networks (default
      0.0.0.0:8090, data in $EDGENODE_HUB_DIR or ~/.edgenode-hub). Nodes use it when their
      config has hub.url and they hold an account token. --nats joins a cluster of hubs
      sharing those NATS servers (the cluster key in <data dir>/cluster.key).
${ISSUER_HELP}
${NODE_HELP}
${MODELS_HELP}
${RUN_HELP}
${NODES_HELP}
${ACCOUNT_HELP}
${IMAGE_HELP}
${DEPLOY_HELP}
${CONTAINERS_HELP}
  edgenode version      Prints the version.
  edgenode help         Prints this help.

${GLOBAL_HELP}

Environment: EDGENODE_API_KEY overrides the config file's key; EDGENODE_DATA_DIR sets the data
directory. Exit codes: 0 done, 1 failed, 2 bad usage or configuration, 130 interrupted.`;

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
  const { values, flags } = listenerFlags(args, {
    "public-url": { type: "string" },
    nats: { type: "string" },
  });
  const named = values as Record<string, unknown>;
  return {
    ...flags,
    publicUrl: named["public-url"] as string | undefined,
    nats: named.nats as string | undefined,
  };
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
  "run",
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
        return await issuerCommand(rest, env);
      case "token":
        return await tokenCommand(rest, env);
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
      case "run":
        return await runCommand(rest, env);
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
