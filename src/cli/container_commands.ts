/**
 * `edgenode containers ls|logs|stop|restart|rm`: the microservices running on a node
 * (/mcm/v1/containers), with the deployment credential. `logs` is container_logs.ts.
 *
 * @module
 */
import type { Container } from "../../gen/mcm/validators.ts";
import { answer, type Env, subcommandsOf } from "./cli_context.ts";
import { printJson, printTable } from "./output.ts";
import type { Command } from "./command.ts";
import { LOGS_HELP, logsCommand } from "./container_logs.ts";
import { deploymentInvocation } from "./deployment_target.ts";

/** The help lines of these commands. */
const HELP = `  edgenode containers ls
      The containers: name, id, image, state, restarts, URL (with deploy's credential).
${LOGS_HELP}
  edgenode containers stop NAME|ID
      Stops a container and keeps it (state stopped; its URL answers 503 until it is started
      again, also after a node restart).
  edgenode containers restart NAME|ID
      Stops a container if it runs and starts it again (a stopped one is started).
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

/** `containers stop` and `containers restart`: the same call but for its last path segment. */
function stateChange(verb: "stop" | "restart") {
  return async (args: string[], env: Env): Promise<number> => {
    const { positionals, target, json } = await deploymentInvocation(args, env, {
      positionals: 1,
      usage: `containers ${verb} NAME|ID`,
    });
    const container = await answer(
      target.client.POST(`/mcm/v1/containers/{id}/${verb}`, {
        params: { path: { id: positionals[0] } },
      }),
      `${verb === "stop" ? "stopping" : "restarting"} container ${positionals[0]}`,
    );
    if (json) printJson(container);
    else {
      console.log(
        verb === "stop"
          ? `stopped ${container.name} (${container.id}); ` +
            `'edgenode containers restart ${container.name}' starts it again`
          : `restarted ${container.name} (${container.id}): ${container.state}`,
      );
    }
    return 0;
  };
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
  ["logs", logsCommand],
  ["stop", stateChange("stop")],
  ["restart", stateChange("restart")],
  ["rm", remove],
]);

/** `edgenode containers ...`. */
export const CONTAINERS_COMMAND: Command = {
  name: "containers",
  help: HELP,
  run: subcommandsOf(
    "containers",
    SUBCOMMANDS,
    "usage: edgenode containers ls|logs NAME [-f]|stop NAME|restart NAME|rm NAME [--purge]",
  ),
};
