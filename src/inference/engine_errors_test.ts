import assert from "node:assert/strict";
import { type ErrorKind, Invalid, NoMemory, NotFound, Unavailable } from "../errors/mod.ts";
import { engineError, scrubbed } from "./engine_errors.ts";

Deno.test("engineError: the kind sent makes the same domain error, details kept", () => {
  const cases = [
    [{ kind: "invalid", details: { exceeded: "context" } }, Invalid],
    [{ kind: "not_found", details: {} }, NotFound],
    [{ kind: "no_memory" }, NoMemory],
  ] as const;
  for (const [sent, Class] of cases) {
    const error = engineError({ type: "error", message: "what to fix", ...sent });
    assert.ok(error instanceof Class, sent.kind);
    assert.equal(error.message, "what to fix");
    assert.deepEqual(error.details, "details" in sent ? sent.details : {});
  }
});

Deno.test("engineError: no kind (or one this node does not know) is the engine's own failure", () => {
  for (const kind of [undefined, "melted"]) {
    const error = engineError({
      type: "error",
      kind: kind as ErrorKind | undefined,
      message: "GGML_ASSERT failed at /home/ci/llama.cpp/ggml.c:42\n  native frames",
    });
    assert.ok(error instanceof Unavailable, String(kind));
    assert.equal(error.message, "the inference engine failed: GGML_ASSERT failed at <path>:42");
  }
});

Deno.test("scrubbed: the first line, without host paths, at most 500 characters", () => {
  assert.equal(
    scrubbed("cannot open /data/models/m/file.gguf: gone\nmore"),
    "cannot open <path>: gone",
  );
  assert.equal(scrubbed("x".repeat(600)).length, 500);
});

Deno.test("engineError: only the details an engine sends are kept, as strings (never headers)", () => {
  const error = engineError({
    type: "error",
    kind: "not_found",
    message: "no such model",
    details: JSON.parse(
      '{"resource":"model","id":"m","allow":"GET","scheme":{},"retryAfterSeconds":"x","field":7}',
    ),
  });
  assert.deepEqual(error.details, { resource: "model", id: "m" });
});
