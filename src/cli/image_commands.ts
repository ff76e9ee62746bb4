/**
 * `edgenode image build|push` and `edgenode deploy`: the developer's side of /mcm/v1.
 *
 * @module
 */
import { basename } from "node:path";
import { parseArgs } from "node:util";
import type { Image } from "../../gen/mcm/validators.ts";
import { ConfigError } from "../node/config.ts";
import { mcmClient } from "../sdk/clients.ts";
import { buildImage } from "./image_build.ts";

/** The help lines of these commands. */
export const IMAGE_HELP = `  edgenode image build DIR|FILE [-o OUT.tar] [--name NAME]
      Bundles a microservice (esbuild; imports must stay inside the project folder) into the
      reference's image format. Default output: NAME.tar.
  edgenode image push IMAGE.tar [--name NAME] [--node URL] [--key KEY]
      Uploads an image (POST /mcm/v1/images).
  edgenode deploy DIR|FILE|IMAGE.tar [--name NAME] [--image-name NAME] [--base-path /PATH]
                  [--env KEY=VALUE]... [--node URL] [--key KEY]
      Builds (unless given a .tar), uploads and starts a container; prints its URL.
      --node defaults to $EDGENODE_NODE or http://localhost:8083; --key to $EDGENODE_KEY or
      $EDGENODE_API_KEY (the node's deployment key or an edge access token with edge:mcm).`;

type Env = (name: string) => string | undefined;

const CONNECTION = {
  node: { type: "string" },
  key: { type: "string" },
} as const;

function connection(values: { node?: string; key?: string }, env: Env) {
  const node = (values.node ?? env("EDGENODE_NODE") ?? "http://localhost:8083").replace(/\/$/, "");
  const key = values.key ?? env("EDGENODE_KEY") ?? env("EDGENODE_API_KEY");
  if (!key) throw new ConfigError("no credential: pass --key or set EDGENODE_KEY");
  return { node, key };
}

/** The data of an SDK call; an Error with the node's message otherwise. */
export async function answer<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
  what: string,
): Promise<T> {
  let result;
  try {
    result = await call;
  } catch (error) {
    throw new Error(`cannot reach the node for ${what}: ${(error as Error).message}`);
  }
  if (result.data !== undefined && result.response.ok) return result.data;
  const message = (result.error as { error?: { message?: string } } | undefined)?.error?.message;
  throw new Error(`${what}: ${result.response.status} ${message ?? JSON.stringify(result.error)}`);
}

function push(
  tar: Uint8Array,
  filename: string,
  name: string | undefined,
  target: { node: string; key: string },
): Promise<Image> {
  const form = new FormData();
  form.append(
    "image",
    new Blob([tar as Uint8Array<ArrayBuffer>], { type: "application/x-tar" }),
    filename,
  );
  if (name) form.append("name", name);
  const client = mcmClient({ url: target.node, credential: target.key });
  return answer(
    client.POST("/mcm/v1/images", {
      body: form as never,
      bodySerializer: (body) => body as unknown as FormData,
    }),
    "uploading the image",
  );
}

async function build(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      o: { type: "string", short: "o" },
      output: { type: "string" },
      name: { type: "string" },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new ConfigError("image build takes one DIR or FILE");
  const image = await buildImage(positionals[0], values.name);
  const out = values.o ?? values.output ?? `${image.name}.tar`;
  await Deno.writeFile(out, image.tar);
  console.log(
    `built ${out}: image ${image.name} ${image.version}, index.js ${image.bundle.length} bytes`,
  );
  return 0;
}

async function pushCommand(args: string[], env: Env): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...CONNECTION, name: { type: "string" } },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new ConfigError("image push takes one IMAGE.tar");
  const tar = await Deno.readFile(positionals[0]);
  const image = await push(tar, basename(positionals[0]), values.name, connection(values, env));
  console.log(JSON.stringify(image, null, 2));
  return 0;
}

/** `edgenode image ...`. */
export function imageCommand(args: string[], env: Env): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "build") return build(rest);
  if (sub === "push") return pushCommand(rest, env);
  throw new ConfigError(`unknown image command '${sub ?? ""}'; try 'image build' or 'image push'`);
}

/** `edgenode deploy ...`. */
export async function deployCommand(args: string[], env: Env): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      ...CONNECTION,
      name: { type: "string" },
      "image-name": { type: "string" },
      "base-path": { type: "string" },
      env: { type: "string", multiple: true },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new ConfigError("deploy takes one DIR, FILE or IMAGE.tar");
  const containerEnv: Record<string, string> = {};
  for (const pair of values.env ?? []) {
    const at = pair.indexOf("=");
    if (at < 1) throw new ConfigError(`--env takes KEY=VALUE, not '${pair}'`);
    containerEnv[pair.slice(0, at)] = pair.slice(at + 1);
  }
  if (values["base-path"]) containerEnv["MCM.BASE_API_PATH"] = values["base-path"];
  const target = connection(values, env);
  const input = positionals[0];
  const image = input.endsWith(".tar")
    ? await push(await Deno.readFile(input), basename(input), values["image-name"], target)
    : await buildImage(input, values["image-name"]).then((built) =>
      push(built.tar, `${built.name}.tar`, built.name, target)
    );
  const name = values.name ?? String(image.name);
  const client = mcmClient({ url: target.node, credential: target.key });
  const container = await answer(
    client.POST("/mcm/v1/containers", { body: { name, image: image.name, env: containerEnv } }),
    "starting the container",
  );
  const basePath = container.env["MCM.BASE_API_PATH"];
  console.log(JSON.stringify(container, null, 2));
  console.log(`serving at ${target.node}${basePath}/`);
  return 0;
}
