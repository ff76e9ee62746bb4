/**
 * Registry calls the tests make again and again, each asserting its documented answer.
 *
 * @module
 */
import { ModelSchema } from "../../gen/store/validators.ts";
import type { Model } from "../../gen/store/validators.ts";
import type { components } from "../../gen/store/types.ts";
import { expectJson, wire } from "../../testing/contract.ts";
import type { TestNode } from "../../testing/node.ts";

type NewModel = components["schemas"]["CreateModelRequest"];

/** POST /models; asserts 201 and returns the Model. */
export async function createModel(
  node: TestNode,
  id: string,
  kind = "llm",
  extra: Record<string, unknown> = {},
): Promise<Model> {
  const body = { id, version: "1", kind, ...extra } as NewModel;
  return await expectJson(
    await wire((wired) => node.store.POST("/models", { body, ...wired })),
    201,
    ModelSchema,
  );
}

/** POST /models/{id}/upload with a raw body (`query` such as "?file=mmproj"); unread. */
export function uploadRaw(
  node: TestNode,
  id: string,
  bytes: Uint8Array,
  query = "",
): Promise<Response> {
  return wire((wired) =>
    node.store.POST("/models/{id}/upload", {
      params: { path: { id }, query: Object.fromEntries(new URLSearchParams(query)) },
      headers: { "Content-Type": "application/octet-stream" },
      body: bytes as never,
      bodySerializer: (body) => body as BodyInit,
      ...wired,
    })
  );
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
