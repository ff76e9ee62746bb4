/**
 * Microservices for tests/hostile_sandbox_test.ts (issue 34, items 3, 4 and 8's paths): each is
 * the index.js of an image, in the reference's programming model.
 */

/**
 * A WebAssembly module with a `grow(pages)` function (memory.grow) and a memory of one page
 * that it exports as `memory` (or keeps to itself): as a JavaScript array literal.
 */
export function growModule(exportMemory: boolean): string {
  const exports = exportMemory
    ? [7, 17, 2, 4, 0x67, 0x72, 0x6f, 0x77, 0, 0, 6, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 2, 0]
    : [7, 8, 1, 4, 0x67, 0x72, 0x6f, 0x77, 0, 0];
  const bytes = [
    [0, 0x61, 0x73, 0x6d, 1, 0, 0, 0],
    [1, 6, 1, 0x60, 1, 0x7f, 1, 0x7f],
    [3, 2, 1, 0],
    [5, 3, 1, 0, 1],
    exports,
    [10, 8, 1, 6, 0, 0x20, 0, 0x40, 0, 0x0b],
  ].flat();
  return `[${bytes.join(",")}]`;
}

/**
 * Memory outside V8's count: /memory makes a 200 MB WebAssembly.Memory, /grow grows one 1 MiB
 * at a time (to 256 MiB at most) from JavaScript, /wasm-grow and /hidden-grow from inside a
 * module that exports its memory or not, /shared a 200 MB SharedArrayBuffer, /intl holds 3,000
 * DateTimeFormats (about 80 MiB of ICU's), /heap holds 40 MiB of plain arrays.
 */
export const MEMORY_SERVICE = `var kept = [];
function outcome(work) {
  try { return { ok: work() }; } catch (error) { return { error: error.name, message: error.message }; }
}
function wasmGrow(exportMemory) {
  var bytes = new Uint8Array(exportMemory ? ${growModule(true)} : ${growModule(false)});
  var instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {});
  kept.push(instance);
  var pages = 1;
  while (pages < 4096 && instance.exports.grow(16) !== -1) pages += 16;
  return pages / 16;
}
mimikModule.exports = function (context, req, res) {
  var url = req.url;
  var result;
  if (url === "/memory") {
    result = outcome(function () { kept.push(new WebAssembly.Memory({ initial: 3200 })); return 200; });
  } else if (url === "/grow") {
    var memory = new WebAssembly.Memory({ initial: 16 });
    kept.push(memory);
    result = outcome(function () {
      for (var mb = 1; mb < 256; mb++) memory.grow(16);
      return mb;
    });
    result.mb = memory.buffer.byteLength / 1048576;
  } else if (url === "/resizable") {
    result = outcome(function () {
      var buffer = new WebAssembly.Memory({ initial: 1, maximum: 4096 }).toResizableBuffer();
      buffer.resize(200 * 1048576);
      return buffer.byteLength / 1048576;
    });
  } else if (url === "/wasm-grow") {
    result = { mb: wasmGrow(true) };
  } else if (url === "/hidden-grow") {
    result = outcome(function () { return wasmGrow(false); });
  } else if (url === "/shared") {
    result = outcome(function () { kept.push(new SharedArrayBuffer(200 * 1048576)); return 200; });
  } else if (url === "/intl") {
    for (var i = 0; i < 3000; i++) kept.push(new Intl.DateTimeFormat(i % 2 ? "de" : "fr", { timeZone: "UTC" }));
    result = { ok: 3000 };
  } else if (url === "/heap") {
    for (var j = 0; j < 40; j++) { var a = new Array(131072); for (var k = 0; k < a.length; k++) a[k] = k; kept.push(a); }
    result = { ok: 40 };
  } else {
    result = { ok: "up" };
  }
  res.end(JSON.stringify(result));
};`;

/**
 * Replaces the globals and prototype methods the runtime could touch, then keeps a core busy
 * (45 ms in every 50): /burn-light replaces Atomics and Math in its handler, before it answers;
 * /burn replaces every one once it answered, /burn-first before it answers (JSON, Date, performance, arrays', maps', sets',
 * strings', typed arrays' and async generators' methods, Promise's, Function's, TextEncoder's…);
 * /spin replaces Atomics and Math, answers and loops for ever; /hang never answers, and burns.
 */
export const POISON_SERVICE = `setTimeout(function () {}, 0); // Node's timers, loaded before
function poison(light) {
  var zero = function () { return 0; };
  var same = function () { return this; };
  var names, i, j;
  var spaces = [Atomics, Math];
  for (i = 0; i < spaces.length; i++) {
    names = Object.getOwnPropertyNames(spaces[i]);
    for (j = 0; j < names.length; j++) if (typeof spaces[i][names[j]] === "function") spaces[i][names[j]] = zero;
  }
  if (light) return;
  JSON.parse = function () { return {}; };
  JSON.stringify = function () { return "{}"; };
  Date.now = zero;
  performance.now = zero;
  crypto.randomUUID = function () { return "x"; };
  TextEncoder.prototype.encode = function () { return new Uint8Array(0); };
  TextDecoder.prototype.decode = function () { return ""; };
  var protos = [Array.prototype, Map.prototype, Set.prototype, WeakMap.prototype, String.prototype,
    Object.getPrototypeOf(Uint8Array.prototype), Object.getPrototypeOf(Object.getPrototypeOf((async function* () {})()))];
  for (i = 0; i < protos.length; i++) {
    names = Object.getOwnPropertyNames(protos[i]);
    for (j = 0; j < names.length; j++) {
      var d = Object.getOwnPropertyDescriptor(protos[i], names[j]);
      if (names[j] !== "constructor" && d && typeof d.value === "function") protos[i][names[j]] = zero;
    }
  }
  Object.keys = function () { return []; };
  Reflect.apply = zero;
  Promise.prototype.then = same;
  Promise.prototype.constructor = function () {};
  try {
    Object.defineProperty(Promise, Symbol.species, { get: function () { throw new Error("no"); } });
  } catch (fixed) {}
  Function.prototype.call = zero;
  Function.prototype.apply = zero;
  Function.prototype.bind = same;
  globalThis.Promise = function () {};
  globalThis.Uint8Array = function () {};
  globalThis.postMessage = zero;
}
var realNow = Date.now;
function burn() {
  setInterval(function () { var t = realNow(); while (realNow() - t < 45) {} }, 50);
}
mimikModule.exports = function (context, req, res) {
  var url = req.url;
  if (url === "/burn-light") {
    // In the handler: the request's own bookkeeping (in flight, then done) runs poisoned.
    poison(true);
    res.end("poisoned");
    burn();
  } else if (url === "/burn") {
    // Once answered: what remains is the runtime's own (reports, counters, the channel).
    res.end("poisoning");
    setTimeout(function () { poison(false); burn(); }, 20);
  } else if (url === "/burn-first") {
    // In the handler: the request's own path (serving, the mux, the channel) runs poisoned.
    poison(false);
    res.end("poisoned");
    burn();
  } else if (url === "/hang") {
    // Never answers: the request must stop counting once the node aborts it.
    burn();
  } else if (url === "/spin") {
    poison(true);
    res.end("poisoned");
    setTimeout(function () { while (true) {} }, 10);
  } else {
    res.end("up");
  }
};`;

/**
 * /stack answers the stack of an error it makes, /fail throws in its handler (logged); with
 * `__FAIL_AT_LOAD__` replaced by `true` it throws while loading (the 422's message).
 */
export const STACK_SERVICE = `function handler(context, req, res) {
  if (req.url === "/fail") throw new Error("failing on purpose");
  if (req.url === "/stack") return res.end(new Error("where am I").stack);
  res.end("up");
}
if (__FAIL_AT_LOAD__) throw new Error("failing at load");
mimikModule.exports = handler;`;
