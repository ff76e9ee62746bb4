/**
 * `edgenode deploy`: build (unless given an image), upload and start a container, then say
 * what runs: its env's keys, what a redeploy dropped, and its URL.
 *
 * @module
 */
import { basename } from "node:path";
import type { Container } from "../../gen/mcm/validators.ts";
import { ConfigError } from "../config/config_error.ts";
import { answer, type Env } from "./cli_context.ts";
import { printJson } from "./output.ts";
import type { Command } from "./command.ts";
import {
  CREDENTIAL_HELP,
  deploymentInvocation,
  type DeploymentTarget,
} from "./deployment_target.ts";
import { buildImage } from "./image_build.ts";
import { pushImage } from "./image_commands.ts";
import { readUserFile } from "./user_files.ts";

/** The help lines of `deploy`. */
const HELP =
  `  edgenode deploy DIR|FILE|IMAGE.tar [--name NAME] [--image-name NAME] [--base-path /PATH]
                  [--env KEY=VALUE]... [--keep-env] [--key-file FILE]
      Builds (unless given a .tar), uploads and starts a container; prints its env's keys and
      its URL. Deploying a name again replaces it, env and base path included: --keep-env
      keeps the previous env's keys that are not given again.
${CREDENTIAL_HELP}`;

const BASE_PATH = "MCM.BASE_API_PATH";
/** Set by the node on every container, never by the deployer. */
const NODE_SET = new Set([BASE_PATH, "MCM.WEBSOCKET_SUPPORT"]);

/** The container of this name, if the caller has one. */
async function existing(target: DeploymentTarget, name: string): Promise<Container | undefined> {
  const call = target.client.GET("/mcm/v1/containers/{id}", { params: { path: { id: name } } });
  const missing = await call.then((result) => result.response.status === 404, () => false);
  return missing ? undefined : await answer(call, `reading container ${name}`);
}

/** The `--env KEY=VALUE` flags as an env. A malformed one is not quoted: it may be a secret. */
function envOf(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  pairs.forEach((pair, i) => {
    const at = pair.indexOf("=");
    if (at < 1) {
      throw new ConfigError(
        `--env takes KEY=VALUE: --env #${i + 1} has ${at ? "no '='" : "no key"}`,
      );
    }
    env[pair.slice(0, at)] = pair.slice(at + 1);
  });
  return env;
}

/** The deployer's own keys of an env, sorted. */
function ownKeys(env: Record<string, string>): string[] {
  return Object.keys(env).filter((key) => !NODE_SET.has(key)).sort();
}

/** What the new deployment runs with and, for a redeploy, what it no longer has. */
function report(target: DeploymentTarget, container: Container, previous?: Container): void {
  console.log(
    `${previous ? "redeployed" : "deployed"} ${container.name} (image ${container.image}): ` +
      container.state,
  );
  // Keys only: values are often secrets.
  const keys = ownKeys(container.env);
  console.log(`env: ${keys.length ? keys.join(", ") : "(none)"}`);
  if (previous) {
    const dropped = ownKeys(previous.env).filter((key) => !(key in container.env));
    if (dropped.length) {
      console.log(
        `dropped env: ${dropped.join(", ")} (a redeploy replaces the env: give --env again, ` +
          "or --keep-env)",
      );
    }
    const before = previous.env[BASE_PATH];
    if (before !== container.env[BASE_PATH]) {
      const requested = before.replace(/^\/[^/]+/, "");
      console.log(
        `base path moved from ${before} (give --base-path ${requested} or --keep-env to keep it)`,
      );
    }
  }
  console.log(`serving at ${target.node}${container.env[BASE_PATH]}/`);
}

/** `edgenode deploy ...`. */
async function deploy(args: string[], env: Env): Promise<number> {
  const parsed = await deploymentInvocation(args, env, {
    positionals: 1,
    usage: "deploy DIR|FILE|IMAGE.tar [--name NAME] [--base-path /PATH] [--env K=V]...",
    options: {
      name: { type: "string" },
      "image-name": { type: "string" },
      "base-path": { type: "string" },
      env: { type: "string", multiple: true },
      "keep-env": { type: "boolean" },
    },
  });
  const { positionals, target } = parsed;
  const values = parsed.values as Record<string, string | undefined> & {
    env?: string[];
    "keep-env"?: boolean;
  };
  const given = envOf(values.env ?? []);
  if (values["base-path"]) given[BASE_PATH] = values["base-path"];
  const input = positionals[0];
  const image = input.endsWith(".tar")
    ? await pushImage(await readUserFile(input), basename(input), values["image-name"], target)
    : await buildImage(input, values["image-name"]).then((built) =>
      pushImage(built.tar, `${built.name}.tar`, built.name, target)
    );
  const name = values.name ?? String(image.name);
  const previous = await existing(target, name);
  // The previous env as the node served it, posted back, is the same deployment (spec/mcm.yaml).
  const kept = values["keep-env"] && previous
    ? Object.fromEntries(
      Object.entries(previous.env).filter(([key]) => key !== "MCM.WEBSOCKET_SUPPORT"),
    )
    : {};
  const container = await answer(
    target.client.POST("/mcm/v1/containers", {
      body: { name, image: image.name, env: { ...kept, ...given } },
    }),
    "starting the container",
  );
  if (parsed.json) printJson(container);
  else report(target, container, previous);
  return 0;
}

/** `edgenode deploy`. */
export const DEPLOY_COMMAND: Command = { name: "deploy", help: HELP, run: deploy };
