/**
 * Microservice deployment for tests: images built by the CLI from `examples/`, uploaded and
 * started over HTTP as developers do.
 *
 * @module
 */
import assert from "node:assert/strict";
import { packTar } from "modern-tar";
import { ContainerSchema, ImageSchema } from "../gen/mcm/validators.ts";
import { mcmClient } from "../src/sdk/clients.ts";
import { expectJson, wire } from "./contract.ts";
import { runEdgenode, type TestNode } from "./node.ts";

/** The repository's examples folder. */
export const EXAMPLES = new URL("../examples/", import.meta.url).pathname;

/** `edgenode image build DIR -o OUT`; returns the archive's bytes. */
export async function buildExample(dir: string, out: string, name?: string): Promise<Uint8Array> {
  const result = await runEdgenode([
    "image",
    "build",
    dir,
    "-o",
    out,
    ...(name ? ["--name", name] : []),
  ]);
  assert.equal(result.code, 0, result.stderr);
  return await Deno.readFile(out);
}

/** A plain image archive holding `script` as its index.js. */
export async function scriptImage(script: string): Promise<Uint8Array> {
  const body = new TextEncoder().encode(script);
  return await packTar([{ header: { name: "index.js", size: body.length, type: "file" }, body }]);
}

/** POST /mcm/v1/images with the archive as the multipart field `image`. */
export function postImage(
  node: TestNode,
  tar: Uint8Array,
  filename = "image.tar",
  fields: Record<string, string> = {},
  credential = node.apiKey,
): Promise<Response> {
  const form = new FormData();
  form.append("image", new Blob([tar as Uint8Array<ArrayBuffer>]), filename);
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return wire((wired) =>
    mcmClient({ url: node.url, credential }).POST("/mcm/v1/images", {
      body: form as never,
      bodySerializer: (body) => body as unknown as FormData,
      ...wired,
    })
  );
}

/** Uploads an image; asserts 201 and the Image shape. */
export async function uploadImage(
  node: TestNode,
  tar: Uint8Array,
  filename = "image.tar",
  fields: Record<string, string> = {},
) {
  return await expectJson(await postImage(node, tar, filename, fields), 201, ImageSchema);
}

/** POST /mcm/v1/containers. */
export function postContainer(
  node: TestNode,
  body: unknown,
  credential = node.apiKey,
): Promise<Response> {
  return wire((wired) =>
    mcmClient({ url: node.url, credential }).POST("/mcm/v1/containers", {
      body: body as never,
      ...wired,
    })
  );
}

/** Starts a container; asserts the status and the Container shape. */
export async function startContainer(node: TestNode, body: unknown, status = 201) {
  return await expectJson(await postContainer(node, body), status, ContainerSchema);
}

/** A /mcm/v1 request with the node's key. */
export function mcm(node: TestNode, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${node.url}/mcm/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${node.apiKey}`, ...init.headers },
  });
}

/** GET /mcm/v1/containers/{id}, checked against the spec. */
export async function containerRecord(node: TestNode, id: string) {
  return await expectJson(await mcm(node, `/containers/${id}`), 200, ContainerSchema);
}

/** The URL a container serves at. */
export function serviceUrl(node: TestNode, container: { env: Record<string, string> }): string {
  return `${node.url}${container.env["MCM.BASE_API_PATH"]}`;
}

/** Builds, uploads and starts an example; returns the container and its URL. */
export async function deployExample(
  node: TestNode,
  example: string,
  name: string,
  env: Record<string, string> = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-image-" });
  try {
    const tar = await buildExample(`${EXAMPLES}${example}`, `${dir}/${name}.tar`, name);
    await uploadImage(node, tar, `${name}.tar`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const container = await startContainer(node, { name, image: name, env });
  return { container, url: serviceUrl(node, container) };
}

/** GET a microservice path; returns status and parsed JSON (any: tests index into it). */
export async function getJson(
  url: string,
  init?: RequestInit,
  // deno-lint-ignore no-explicit-any
): Promise<{ status: number; body: any }> {
  const response = await fetch(url, init);
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    return { status: response.status, body: text };
  }
}

/**
 * Uploads `script` as the index.js of image `name` for client `client` (the key's holder
 * speaking for it, `x-client-id`) and starts container `name` of it with `env`.
 */
export async function deployScript(
  node: TestNode,
  name: string,
  script: string,
  env: Record<string, string> = {},
  client = "api",
) {
  const tar = await scriptImage(script);
  const form = new FormData();
  form.append("image", new Blob([tar as Uint8Array<ArrayBuffer>]), `${name}.tar`);
  const headers = { authorization: `Bearer ${node.apiKey}`, "x-client-id": client };
  const uploaded = await fetch(`${node.url}/mcm/v1/images`, {
    method: "POST",
    body: form,
    headers,
  });
  assert.equal(uploaded.status, 201, await uploaded.text());
  const started = await fetch(`${node.url}/mcm/v1/containers`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ name, image: name, env }),
  });
  const container = await expectJson(started, 201, ContainerSchema);
  return { container, url: serviceUrl(node, container) };
}
