/**
 * `edgenode image build|push` and `edgenode images ls|rm`: microservice images, the
 * developer's side of /mcm/v1/images.
 *
 * @module
 */
import { basename } from "node:path";
import { parseArgs } from "node:util";
import type { Image } from "../../gen/mcm/validators.ts";
import { ConfigError } from "../config/config_error.ts";
import { humanBytes, humanTime } from "../sdk/human_units.ts";
import { answer, type Env, subcommandsOf } from "./cli_context.ts";
import { printJson, printTable } from "./output.ts";
import type { Command } from "./command.ts";
import { deploymentInvocation, type DeploymentTarget } from "./deployment_target.ts";
import { buildImage } from "./image_build.ts";
import { readUserFile } from "./user_files.ts";

/** The help lines of `image`. */
const IMAGE_HELP = `  edgenode image build DIR|FILE [-o OUT.tar] [--name NAME]
      Bundles a microservice (esbuild; imports must stay inside the project folder) into the
      reference's image format. Default output: NAME.tar.
  edgenode image push IMAGE.tar [--name NAME]
      Uploads an image (POST /mcm/v1/images), with deploy's credential.`;

/** The help lines of `images`. */
const IMAGES_HELP = `  edgenode images ls
      The images on the node: name, id, size, containers using it, upload time (with
      deploy's credential).
  edgenode images rm NAME|ID
      Removes an image no container uses.`;

/** The upload of an image archive. */
export function pushImage(
  tar: Uint8Array,
  filename: string,
  name: string | undefined,
  target: DeploymentTarget,
): Promise<Image> {
  const form = new FormData();
  form.append(
    "image",
    new Blob([tar as Uint8Array<ArrayBuffer>], { type: "application/x-tar" }),
    filename,
  );
  if (name) form.append("name", name);
  return answer(
    target.client.POST("/mcm/v1/images", {
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
  if (positionals.length !== 1) {
    throw new ConfigError("usage: edgenode image build DIR|FILE [-o OUT.tar] [--name NAME]");
  }
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

async function push(args: string[], env: Env): Promise<number> {
  const { values, positionals, target, json } = await deploymentInvocation(args, env, {
    positionals: 1,
    usage: "image push IMAGE.tar [--name NAME]",
    options: { name: { type: "string" } },
  });
  const tar = await readUserFile(positionals[0]);
  const name = (values as Record<string, string | undefined>).name;
  const image = await pushImage(tar, basename(positionals[0]), name, target);
  if (json) return printJson(image), 0;
  console.log(`pushed image ${image.name} (${image.id}, ${image.size} bytes, ${image.digest})`);
  return 0;
}

async function list(args: string[], env: Env): Promise<number> {
  const { target, json } = await deploymentInvocation(args, env, {
    positionals: 0,
    usage: "images ls",
  });
  const images = await answer(target.client.GET("/mcm/v1/images"), "listing the images");
  if (json) return printJson(images), 0;
  printTable(
    ["NAME", "ID", "SIZE", "CONTAINERS", "CREATED"],
    images.data.map((image) => [
      image.name,
      image.id,
      humanBytes(image.size),
      String(image.containers),
      humanTime(image.created * 1000),
    ]),
  );
  return 0;
}

async function remove(args: string[], env: Env): Promise<number> {
  const { positionals, target, json } = await deploymentInvocation(args, env, {
    positionals: 1,
    usage: "images rm NAME|ID",
  });
  const image = await answer(
    target.client.DELETE("/mcm/v1/images/{id}", { params: { path: { id: positionals[0] } } }),
    `removing image ${positionals[0]}`,
  );
  if (json) printJson(image);
  else console.log(`removed image ${image.name} (${image.id})`);
  return 0;
}

const SUBCOMMANDS = new Map<string, (args: string[], env: Env) => Promise<number>>([
  ["build", (args) => build(args)],
  ["push", push],
  ["ls", list],
  ["rm", remove],
]);

/** `edgenode image ...` and `edgenode images ...` (the same subcommands, helped apart). */
const image = subcommandsOf(
  "image",
  SUBCOMMANDS,
  "usage: edgenode image build|push|ls|rm ... ('edgenode image --help')",
);

/** `edgenode image` and `edgenode images`. */
export const IMAGE_COMMANDS: readonly Command[] = [
  { name: "image", help: IMAGE_HELP, run: image },
  { name: "images", help: IMAGES_HELP, run: image },
];
