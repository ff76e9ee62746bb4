/**
 * `edgenode containers logs NAME|ID [-f]`: a container's recent log lines, and with `-f`
 * (`--follow`) the new ones as they come, over the node's event stream of the log
 * (GET /mcm/v1/containers/{id}/logs?follow=true), until Ctrl-C or the container is removed.
 *
 * @module
 */
import { EventSourceParserStream } from "eventsource-parser/stream";
import * as v from "valibot";
import {
  type LogFollowMessage,
  LogFollowMessageSchema,
  type LogLine,
} from "../../gen/mcm/validators.ts";
import { nodeError } from "../sdk/node_errors.ts";
import { answer, clientError, type Env, reach } from "./cli_context.ts";
import { printJson } from "./output.ts";
import { terminalSafe } from "./terminal_text.ts";
import { deploymentInvocation, type DeploymentTarget } from "./deployment_target.ts";

/** The help lines of `containers logs`. */
export const LOGS_HELP = `  edgenode containers logs NAME|ID [-f|--follow]
      The container's recent log lines (its console.* and the node's notes on it), oldest first;
      -f then prints new lines as they come, until Ctrl-C or the container is removed (exit 0,
      with a line saying so). --json prints the lines as JSON (one object a line with -f).`;

/**
 * A log line as people read it: local date and time to the millisecond, level, message; what the
 * node sent is escaped (terminalSafe), whatever node it is.
 */
export function logText(line: LogLine): string {
  const time = new Date(line.time - new Date(line.time).getTimezoneOffset() * 60_000)
    .toISOString().slice(0, 23).replace("T", " ");
  return terminalSafe(`${time}  ${String(line.level).padEnd(5)}  ${line.message}`);
}

/** The messages of a followed log, as they come. */
async function* followed(target: DeploymentTarget, id: string): AsyncGenerator<LogFollowMessage> {
  const { response, error } = await reach(
    target.client.GET("/mcm/v1/containers/{id}/logs", {
      params: { path: { id }, query: { follow: true } },
      parseAs: "stream",
    }),
  );
  // openapi-fetch has read an error answer's body into `error` whatever parseAs says.
  if (!response.ok || !response.body) {
    throw clientError(nodeError(response, error, `following the logs of ${id}`));
  }
  const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of events) yield v.parse(LogFollowMessageSchema, JSON.parse(event.data));
}

/** Prints the log as it grows; resolves to 0 when the container is removed. */
async function follow(target: DeploymentTarget, id: string, json: boolean): Promise<number> {
  try {
    for await (const message of followed(target, id)) {
      if (json) console.log(JSON.stringify(message));
      else if ("end" in message) {
        console.error(`edgenode: ${terminalSafe(message.message)}; the log ends here`);
      } else console.log(logText(message));
      if ("end" in message) return message.end === "removed" ? 0 : 1;
    }
  } catch (error) {
    // The connection broke mid-stream (the node was killed, the network went).
    if (error instanceof TypeError || (error as Error).name === "Http") {
      const why = (error as Error).message;
      throw new Error(`the node at ${target.node} closed the log's stream: ${why}`);
    }
    throw error;
  }
  throw new Error(`the node at ${target.node} closed the log's stream`);
}

/** `edgenode containers logs NAME|ID [-f]`. */
export async function logsCommand(args: string[], env: Env): Promise<number> {
  const { values, positionals, target, json } = await deploymentInvocation(args, env, {
    positionals: 1,
    usage: "containers logs NAME|ID [-f|--follow]",
    options: { follow: { type: "boolean", short: "f" } },
  });
  const [id] = positionals;
  if ((values as { follow?: boolean }).follow === true) return await follow(target, id, json);
  const lines = await answer(
    target.client.GET("/mcm/v1/containers/{id}/logs", { params: { path: { id } } }),
    `reading the logs of ${id}`,
  );
  if (json) printJson(lines);
  else for (const line of (lines as { data: LogLine[] }).data) console.log(logText(line));
  return 0;
}
