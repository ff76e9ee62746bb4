import assert from "node:assert/strict";
import { Unavailable } from "../errors/mod.ts";
import type { HubLink } from "./hub_link.ts";
import { requireHub } from "./require_hub.ts";

Deno.test("requireHub: the link when there is one, else Unavailable naming the setting", () => {
  const hub = { url: "https://hub.example" } as HubLink;
  assert.equal(requireHub(hub, "type=account"), hub);
  assert.throws(
    () => requireHub(undefined, "type=account"),
    (error: unknown) =>
      error instanceof Unavailable &&
      error.message ===
        "type=account needs a hub, and none is configured: set hub.url in the node's config",
  );
});
