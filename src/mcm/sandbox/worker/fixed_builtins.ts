/**
 * Built-ins the sandbox fixes in place before the microservice's code runs (sandbox_globals.ts).
 *
 * @module
 */

/**
 * Fixes (non-writable, non-configurable) the built-ins that Deno's own code in the worker, and
 * the sandbox's, reach through what the microservice could replace, so that replacing them
 * cannot stop the channel or the watchdog's reports (which would end the container by the
 * node's ping, not by its limits): `Promise.prototype.constructor`, which every `await` reads
 * (replaced, each `await` would go through a `then` of theirs), and `Promise[Symbol.species]`,
 * which every `then` reads; `Function.prototype.call`, which Deno's delivery of a port's
 * messages calls. Subclasses (`class extends Promise`) and functions define their own as
 * before. The cost: V8's promise fast path assumes nobody touched these, about 20 ns more per
 * `then` or `await` in the worker (under 0.5% of a request; README, "Microservices").
 */
export function fixBuiltins(): void {
  const fixed: [object, PropertyKey][] = [
    [Promise.prototype, "constructor"],
    [Promise, Symbol.species],
    [Function.prototype, "call"],
  ];
  for (const [target, name] of fixed) {
    Object.defineProperty(target, name, { configurable: false });
    const descriptor = Object.getOwnPropertyDescriptor(target, name)!;
    if ("value" in descriptor) Object.defineProperty(target, name, { writable: false });
  }
}
