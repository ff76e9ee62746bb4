import assert from "node:assert/strict";
import { boundMemories, copyOfSource, PAGE_BYTES } from "./wasm_limits.ts";

/** A module with one memory of `initial` pages (and `max`, if given), exported as "memory". */
function moduleWith(initial: number, max?: number): Uint8Array {
  const leb = (value: number): number[] =>
    value < 128 ? [value] : [(value & 0x7f) | 0x80, ...leb(value >> 7)];
  const limits = max === undefined ? [0, ...leb(initial)] : [1, ...leb(initial), ...leb(max)];
  return new Uint8Array([
    ...[0, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    ...[5, 1 + limits.length, 1, ...limits],
    ...[7, 10, 1, 6, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 2, 0],
  ]);
}

function memoryOf(bytes: Uint8Array): WebAssembly.Memory {
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes as BufferSource), {});
  return instance.exports.memory as WebAssembly.Memory;
}

Deno.test("a defined memory without a maximum gets the pages allowed as its maximum", () => {
  const { bytes, memories } = boundMemories(moduleWith(1), 4);
  assert.deepEqual(memories, [{ initialPages: 1, maxPages: 4 }]);
  const memory = memoryOf(bytes);
  assert.equal(memory.grow(3), 1);
  assert.throws(() => memory.grow(1), RangeError);
  assert.equal(memory.buffer.byteLength, 4 * PAGE_BYTES);
});

Deno.test("a declared maximum below the allowance is kept; one above it is lowered", () => {
  assert.deepEqual(boundMemories(moduleWith(1, 2), 100).memories, [{
    initialPages: 1,
    maxPages: 2,
  }]);
  // 300 pages: a two-byte LEB128, so the section's size changes.
  const { bytes, memories } = boundMemories(moduleWith(1, 300), 200);
  assert.deepEqual(memories, [{ initialPages: 1, maxPages: 200 }]);
  assert.ok(WebAssembly.validate(bytes as BufferSource));
});

Deno.test("an initial size over the allowance is kept (the charge refuses it) and bytes are copied", () => {
  assert.deepEqual(boundMemories(moduleWith(10), 4).memories, [{
    initialPages: 10,
    maxPages: 10,
  }]);
  const source = moduleWith(1);
  const copy = copyOfSource(source.subarray(0));
  source[8] = 0;
  assert.equal(copy[8], 5, "the copy is the module as it was");
  const garbage = new Uint8Array([1, 2, 3]);
  assert.equal(boundMemories(garbage, 4).bytes, garbage, "not WebAssembly: left to compile");
});
