/** The GPU layers chosen for a load (gpu_layers.ts). */
import assert from "node:assert/strict";
import { gpuLayersFor } from "./gpu_layers.ts";

Deno.test("GPU layers: none on the CPU, clamped, 99 and -1 all, absent fits", () => {
  const table: [number | undefined, "cpu" | "cuda", number | "auto", RegExp][] = [
    [99, "cpu", 0, /^running on the CPU: why$/],
    [99, "cuda", 28, /all 28 layers on cuda/],
    [-1, "cuda", 28, /all 28 layers/],
    [0, "cuda", 0, /initGpuLayerSize is 0/],
    [10, "cuda", 10, /10 of 28/],
    [undefined, "cuda", "auto", /as many as fit/],
  ];
  for (const [requested, backend, layers, reason] of table) {
    const got = gpuLayersFor(requested, backend, 28, "why");
    assert.deepEqual(got.layers, layers);
    assert.match(got.reason, reason);
  }
});
