/**
 * `edgenode ps`: what runs on a node now, as `docker ps` and `ollama ps` show it: the loaded
 * models (the inference API's GET /models, `loaded: true`) and the containers
 * (GET /mcm/v1/containers, with the deployment credential), as two short tables or, with
 * `--json`, one object `{ models, containers }`.
 *
 * @module
 */
import type { ModelEntry } from "../../gen/inference/validators.ts";
import type { Container } from "../../gen/mcm/validators.ts";
import { nodeError, nodeFetch } from "../sdk/node_errors.ts";
import { answer, type Env, reach } from "./cli_context.ts";
import { printJson, printTable } from "./output.ts";
import type { Command } from "./command.ts";
import { CREDENTIAL_HELP, deploymentInvocation } from "./deployment_target.ts";

/** Where the OpenAI-compatible API may be: the short prefix, then the reference's. */
const INFERENCE_PREFIXES = ["/v1", "/mimik-ai/openai/v1"];

const HELP = `  edgenode ps
      What runs on the node: the loaded models (kind, context, backend, GPU layers) and the
      containers (name, image, state, restarts), as two tables; --json prints
      {models, containers}.
${CREDENTIAL_HELP}`;

/**
 * The node's models as its inference API lists them (public: no key needed); undefined when
 * the node serves no inference API (inference is off).
 */
export async function listModels(url: string): Promise<ModelEntry[] | undefined> {
  const fetcher = nodeFetch(url);
  for (const prefix of INFERENCE_PREFIXES) {
    const response = await reach(fetcher(`${url}${prefix}/models`));
    const body = await response.json().catch(() => undefined);
    if (response.ok) return (body as { data: ModelEntry[] }).data;
    if (response.status !== 404) throw nodeError(response, body, "listing the models");
  }
  return undefined;
}

/** A loaded model as a table row. */
function modelRow(model: ModelEntry): string[] {
  const { kind, max_context, backend, n_gpu_layers } = model.info;
  return [
    model.id,
    kind,
    max_context === undefined ? "-" : String(max_context),
    backend ?? "-",
    n_gpu_layers === undefined ? "-" : String(n_gpu_layers),
  ];
}

/** A container as a table row. */
function containerRow(container: Container): string[] {
  return [container.name, container.image, container.state, String(container.restarts)];
}

async function ps(args: string[], env: Env): Promise<number> {
  const { target, json } = await deploymentInvocation(args, env, { positionals: 0, usage: "ps" });
  const [models, containers] = await Promise.all([
    listModels(target.node),
    answer(target.client.GET("/mcm/v1/containers"), "listing the containers"),
  ]);
  const loaded = (models ?? []).filter((model) => model.loaded === true);
  if (json) return printJson({ models: loaded, containers: containers.data }), 0;
  if (models === undefined) console.log("models: the node serves no inference API (inference off)");
  else if (loaded.length === 0) console.log("models: none loaded");
  else printTable(["MODEL", "KIND", "CONTEXT", "BACKEND", "GPU LAYERS"], loaded.map(modelRow));
  console.log();
  if (containers.data.length === 0) console.log("containers: none");
  else printTable(["CONTAINER", "IMAGE", "STATE", "RESTARTS"], containers.data.map(containerRow));
  return 0;
}

/** `edgenode ps`. */
export const PS_COMMAND: Command = { name: "ps", help: HELP, run: ps };
