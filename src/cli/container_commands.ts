/**
 * `edgenode containers ls|logs|rm`: the microservices running on a node (/mcm/v1/containers),
 * with the deployment credential.
 *
 * @module
 */
import type { Container, LogLine } from "../../gen/mcm/validators.ts";
import { answer, type Env, subcommandsOf } from "./cli_context.ts";
import { printJson, printTable } from "./output.ts";
import type { Command } from "./command.ts";
import { deploymentInvocation } from "./deployment_target.ts";

/** The help lines of these commands. */
const HELP = `  edgenode containers ls
      The containers: name, id, image, state, restarts, URL (with deploy's credential).
  edgenode containers logs NAME|ID
      The container's recent log lines (its console.* and the node's notes on it), oldest first.
  edgenode containers rm NAME|ID [--purge]
      Stops and removes a container; its storage is kept for a later deploy unless --purge.`;

/** A container as a table row. */
function row(node: string, container: Container): string[] {
  return [
    container.name,
    container.id,
    container.image,
    container.state,
    String(container.restarts),
    `${node}${container.env["MCM.BASE_API_PATH"]}/`,
  ];
}

/** A log line as people read it: local date and time to the millisecond, level, message. */
function logText(line: LogLine): string {
  const time = new Date(line.time - new Date(line.time).getTimezoneOffset() * 60_000)
    .toISOString().slice(0, 23).replace("T", " ");
  return `${time}  ${line.level.padEnd(5)}  ${line.message}`;
}

async function list(args: string[], env: Env): Promise<number> {
  const { target, json } = await deploymentInvocation(args, env, {
    positionals: 0,
    usage: "containers ls",
  });
  const containers = await answer(
    target.client.GET("/mcm/v1/containers"),
    "listing the containers",
  );
  if (json) return printJson(containers), 0;
  printTable(
    ["NAME", "ID", "IMAGE", "STATE", "RESTARTS", "URL"],
    containers.data.map((container) => row(target.node, container)),
  );
  return 0;
}

async function logs(args: string[], env: Env): Promise<number> {
  const { positionals, target, json } = await deploymentInvocation(args, env, {
    positionals: 1,
    usage: "containers logs NAME|ID",
  });
  const lines = await answer(
    target.client.GET("/mcm/v1/containers/{id}/logs", {
      params: { path: { id: positionals[0] } },
    }),
    `reading the logs of ${positionals[0]}`,
  );
  if (json) printJson(lines);
  else for (const line of lines.data) console.log(logText(line));
  return 0;
}

async function remove(args: string[], env: Env): Promise<number> {
  const { values, positionals, target, json } = await deploymentInvocation(args, env, {
    positionals: 1,
    usage: "containers rm NAME|ID [--purge]",
    options: { purge: { type: "boolean" } },
  });
  const purge = (values as { purge?: boolean }).purge === true;
  const container = await answer(
    target.client.DELETE("/mcm/v1/containers/{id}", {
      params: { path: { id: positionals[0] }, query: purge ? { purge: true } : {} },
    }),
    `removing container ${positionals[0]}`,
  );
  if (json) printJson(container);
  else {
    console.log(
      `removed ${container.name} (${container.id}); ` +
        (purge ? "its storage too" : "its storage is kept for its next deploy (--purge drops it)"),
    );
  }
  return 0;
}

const SUBCOMMANDS = new Map<string, (args: string[], env: Env) => Promise<number>>([
  ["ls", list],
  ["logs", logs],
  ["rm", remove],
]);

/** `edgenode containers ...`. */
export const CONTAINERS_COMMAND: Command = {
  name: "containers",
  help: HELP,
  run: subcommandsOf(
    "containers",
    SUBCOMMANDS,
    "usage: edgenode containers ls|logs NAME|rm NAME [--purge]",
  ),
};
