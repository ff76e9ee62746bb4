/**
 * `edgenode image build|push` and `edgenode deploy`: the developer's side of /mcm/v1.
 *
 * @module
 */
import { basename } from "node:path";
import { parseArgs } from "node:util";
import type { Image } from "../../gen/mcm/validators.ts";
import { ConfigError } from "../config/config_error.ts";
import { mcmClient } from "../sdk/clients.ts";
import { answer, type Env, invocation, printJson } from "./cli_context.ts";
import { buildImage } from "./image_build.ts";

/** The help lines of these commands. */
export const IMAGE_HELP = `  edgenode image build DIR|FILE [-o OUT.tar] [--name NAME]
      Bundles a microservice (esbuild; imports must stay inside the project folder) into the
      reference's image format. Default output: NAME.tar.
  edgenode image push IMAGE.tar [--name NAME]
      Uploads an image (POST /mcm/v1/images).
  edgenode deploy DIR|FILE|IMAGE.tar [--name NAME] [--image-name NAME] [--base-path /PATH]
                  [--env KEY=VALUE]...
      Builds (unless given a .tar), uploads and starts a container; prints its URL. The
      credential (--api-key, or --key) is the node's deployment key or an edge access token
      with edge:mcm; $EDGENODE_KEY is read before the API key's usual places.`;

/** The node to deploy to and the credential, from the global flags (and --key, EDGENODE_KEY). */
function connection(
  args: string[],
  options: Record<string, { type: "string"; multiple?: boolean }>,
  env: Env,
) {
  const parsed = invocation(args, { ...options, key: { type: "string" } }, env);
  const values = parsed.values as Record<string, unknown>;
  const key = (values.key as string | undefined) ?? (values["api-key"] as string | undefined) ??
    env("EDGENODE_KEY") ?? parsed.connection.credential;
  if (!key) throw new ConfigError("no credential: pass --api-key or set EDGENODE_KEY");
  return { ...parsed, target: { node: parsed.connection.url, key } };
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
      json: { type: "boolean" },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new ConfigError("image build takes one DIR or FILE");
  const image = await buildImage(positionals[0], values.name);
  const out = values.o ?? values.output ?? `${image.name}.tar`;
  await Deno.writeFile(out, image.tar);
  if (values.json) {
    const { name, version } = image;
    printJson({ file: out, name, version, bundleBytes: image.bundle.length });
    return 0;
  }
  console.log(
    `built ${out}: image ${image.name} ${image.version}, index.js ${image.bundle.length} bytes`,
  );
  return 0;
}

async function pushCommand(args: string[], env: Env): Promise<number> {
  const { values, positionals, target, json } = connection(args, { name: { type: "string" } }, env);
  if (positionals.length !== 1) throw new ConfigError("image push takes one IMAGE.tar");
  const tar = await Deno.readFile(positionals[0]);
  const name = (values as Record<string, string | undefined>).name;
  const image = await push(tar, basename(positionals[0]), name, target);
  if (json) printJson(image);
  else {console.log(
      `pushed image ${image.name} (${image.id}, ${image.size} bytes, ${image.digest})`,
    );}
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
  const parsed = connection(args, {
    name: { type: "string" },
    "image-name": { type: "string" },
    "base-path": { type: "string" },
    env: { type: "string", multiple: true },
  }, env);
  const { positionals, target } = parsed;
  const values = parsed.values as Record<string, string | undefined> & { env?: string[] };
  if (positionals.length !== 1) throw new ConfigError("deploy takes one DIR, FILE or IMAGE.tar");
  const containerEnv: Record<string, string> = {};
  for (const pair of values.env ?? []) {
    const at = pair.indexOf("=");
    if (at < 1) throw new ConfigError(`--env takes KEY=VALUE, not '${pair}'`);
    containerEnv[pair.slice(0, at)] = pair.slice(at + 1);
  }
  if (values["base-path"]) containerEnv["MCM.BASE_API_PATH"] = values["base-path"];
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
  if (parsed.json) printJson(container);
  else {
    console.log(`deployed ${container.name} (image ${container.image}): ${container.state}`);
    console.log(`serving at ${target.node}${basePath}/`);
  }
  return 0;
}
