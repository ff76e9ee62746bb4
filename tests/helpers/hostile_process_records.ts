/**
 * Reading containers' records and in-memory state for tests/hostile_process_test.ts.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type Container, ContainerSchema } from "../../gen/mcm/validators.ts";
import { expectJson } from "../../testing/contract.ts";
import { mcm } from "../../testing/mcm.ts";
import { type TestNode, waitFor } from "../../testing/node.ts";

/** The container's record, checked against spec/mcm.yaml. */
export async function record(node: TestNode, id: string): Promise<Container> {
  return await expectJson(await mcm(node, `/containers/${id}`), 200, ContainerSchema);
}

/** Its record once it runs again and `ready` holds of it (its process's end was judged). */
export async function settled(
  node: TestNode,
  id: string,
  ready: (container: Container) => boolean,
  ms = 20_000,
): Promise<Container> {
  let last: Container | undefined;
  try {
    await waitFor(
      async () => {
        last = await record(node, id);
        return last.state === "started" && ready(last);
      },
      `${id} back and judged`,
      ms,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; its record: ${JSON.stringify(last)}`);
  }
  return last!;
}

/** The service's in-memory count of requests, after this one. */
export async function hits(url: string): Promise<number> {
  const response = await fetch(`${url}/`);
  assert.equal(response.status, 200, `${url}/ answered ${response.status}`);
  return (await response.json()).hits;
}

/** The container's log lines, one text. */
export async function logText(node: TestNode, id: string): Promise<string> {
  const response = await mcm(node, `/containers/${id}/logs`);
  assert.equal(response.status, 200);
  const body = await response.json();
  return body.data.map((line: { message: string }) => line.message).join("\n");
}
