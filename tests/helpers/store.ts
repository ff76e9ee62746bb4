/**
 * Registry calls the tests make again and again, each asserting its documented answer.
 *
 * @module
 */
import { ModelSchema } from "../../gen/store/validators.ts";
import type { Model } from "../../gen/store/validators.ts";
import { expectJson } from "./contract.ts";
import type { TestNode } from "./node.ts";

/** POST /models; asserts 201 and returns the Model. */
export async function createModel(
  node: TestNode,
  id: string,
  kind = "llm",
  extra: Record<string, unknown> = {},
): Promise<Model> {
  const response = await fetch(`${node.storeUrl}/models`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({ id, version: "1", kind, ...extra }),
  });
  return await expectJson(response, 201, ModelSchema);
}

/** POST /models/{id}/upload with a raw body; returns the response unread. */
export function uploadRaw(
  node: TestNode,
  id: string,
  bytes: Uint8Array,
  query = "",
): Promise<Response> {
  return fetch(`${node.storeUrl}/models/${id}/upload${query}`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/octet-stream" }),
    body: bytes as BodyInit,
  });
}

/** Creates a model and uploads its file; asserts both and returns the ready Model. */
export async function readyModel(
  node: TestNode,
  id: string,
  bytes: Uint8Array,
  extra: Record<string, unknown> = {},
): Promise<Model> {
  await createModel(node, id, "llm", extra);
  return await expectJson(await uploadRaw(node, id, bytes), 200, ModelSchema);
}
